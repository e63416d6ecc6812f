//! Which order each confirmation refunds.
//!
//! The shop's API refunds an order's lines once, so a run of many confirmations needs an order
//! for each: the API adds orders for load tests (`fernhill shop-api --load-orders N`, or a
//! [`crate::fleet::Fleet`]'s own API as runs ask), `O-100001` upwards, each held whole for a
//! lead. A shop API that refunds an order again and again (the Python reference) can be given
//! one order for all.

use std::{
    fmt,
    str::FromStr,
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
};

use shop_api::{OrderId, seed::FIRST_LOAD_ORDER};

/// The orders of a run, handed out one per confirmation. Clones share the count, so runs that
/// share an `Orders` never refund the same order.
#[derive(Debug, Clone)]
pub enum Orders {
    /// The same order every time.
    Same(OrderId),
    /// `O-{n}` for the next number, from the one given.
    Numbered(Arc<AtomicU32>),
}

impl Orders {
    /// `O-{first}`, `O-{first + 1}`, … in turn.
    pub fn numbered_from(first: u32) -> Self {
        Orders::Numbered(Arc::new(AtomicU32::new(first)))
    }

    /// The order the next confirmation refunds.
    pub fn next(&self) -> String {
        match self {
            Orders::Same(order) => order.to_string(),
            Orders::Numbered(next) => format!("O-{}", next.fetch_add(1, Ordering::Relaxed)),
        }
    }
}

impl Default for Orders {
    /// The API's load orders, from the first.
    fn default() -> Self {
        Orders::numbered_from(FIRST_LOAD_ORDER)
    }
}

/// Why a command line's orders did not read.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not an order (O-2289) or the first of numbered orders (O-100001+)")]
pub struct OrdersError(String);

impl FromStr for Orders {
    type Err = OrdersError;

    /// `O-2289` (that order every time) or `O-100001+` (that one, then the next, …).
    fn from_str(text: &str) -> Result<Self, OrdersError> {
        let wrong = || OrdersError(text.to_owned());
        match text.strip_suffix('+') {
            Some(first) => {
                let order = OrderId::parse(first).map_err(|_| wrong())?;
                let number = order.as_str()[2..].parse().map_err(|_| wrong())?;
                Ok(Orders::numbered_from(number))
            }
            None => Ok(Orders::Same(OrderId::parse(text).map_err(|_| wrong())?)),
        }
    }
}

impl fmt::Display for Orders {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Orders::Same(order) => write!(f, "{order}"),
            Orders::Numbered(next) => write!(f, "O-{}+", next.load(Ordering::Relaxed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_one_order_or_the_first_of_many() {
        let same: Orders = "O-2289".parse().unwrap();
        assert_eq!((same.next(), same.next()), ("O-2289".to_owned(), "O-2289".to_owned()));
        let numbered: Orders = "O-100001+".parse().unwrap();
        let shared = numbered.clone();
        assert_eq!((numbered.next(), shared.next()), ("O-100001".to_owned(), "O-100002".to_owned()));
        assert_eq!(numbered.to_string(), "O-100003+");
        for bad in ["", "2289", "O-22+", "O-2289++", "+"] {
            assert!(bad.parse::<Orders>().is_err(), "{bad:?}");
        }
    }
}
