//! The orders a new store starts with.

use crate::ids::{OrderId, Sku};
use crate::model::{Order, OrderLine};
use crate::money::Cents;
use crate::policy::CURRENCY;

/// (SKU, product name, quantity, unit price in cents)
type SeedLine = (&'static str, &'static str, u32, i64);

/// (order ID, customer, status, shipping in cents, lines)
type SeedOrder = (&'static str, &'static str, &'static str, i64, &'static [SeedLine]);

const ORDERS: &[SeedOrder] = &[
    ("O-1021", "Ada Lindqvist", "delivered", 500, &[("KG-0077", "Beechwood spoon set", 1, 3490)]),
    (
        "O-1145",
        "Maren Holt",
        "delivered",
        899,
        &[
            ("KG-1043", "Enamelled cast-iron casserole, 5 l", 1, 24950),
            ("GG-2210", "Galvanised watering can, 9 l", 2, 4250),
        ],
    ),
    ("O-2289", "Tomas Reyes", "delivered", 1500, &[("GG-0412", "Raised cedar planter", 1, 16500)]),
    (
        "O-3310",
        "Priya Natarajan",
        "delivered",
        590,
        &[("KG-2318", "Stoneware mixing bowl, 3 l", 1, 3800), ("KG-0415", "Linen tea towels, set of 3", 1, 2450)],
    ),
    (
        "O-3471",
        "Jonas Berg",
        "shipped",
        495,
        &[("GG-1187", "Bypass pruning shears", 1, 4600), ("GG-0923", "Coir seed-starting pots, pack of 24", 2, 795)],
    ),
    ("O-4102", "Elena Moretti", "delivered", 650, &[("KG-3050", "Carbon-steel wok, 32 cm", 1, 8900)]),
    (
        "O-5150",
        "Samuel Okafor",
        "delivered",
        2900,
        &[("GG-3302", "Teak garden bench, 120 cm", 1, 38900), ("GG-0640", "Weatherproof bench cushion", 1, 5400)],
    ),
];

/// The first of the orders a load test refunds, one each ([`load_orders`]).
pub const FIRST_LOAD_ORDER: u32 = 100_001;

/// The seed orders, with totals computed from their lines.
pub fn orders() -> Vec<Order> {
    ORDERS
        .iter()
        .map(|&(order_id, customer, status, shipping, lines)| order(order_id, customer, status, shipping, lines))
        .collect()
}

/// `count` orders for load tests from `O-{first}` upwards (at least [`FIRST_LOAD_ORDER`]), each
/// as O-2289 is (one 165.00 line and 15.00 shipping, so its whole refund, 180.00, is held for a
/// lead). A refund covers an order's lines once, so a load test that confirms many refunds
/// needs an order for each.
pub fn load_orders(first: u32, count: u32) -> impl Iterator<Item = Order> {
    const LINES: &[SeedLine] = &[("GG-0412", "Raised cedar planter", 1, 16500)];
    // Order IDs have at most 9 digits.
    let first = first.max(FIRST_LOAD_ORDER);
    (first..first.saturating_add(count).min(1_000_000_000))
        .map(|number| order(&format!("O-{number}"), "Load test customer", "delivered", 1500, LINES))
}

fn order(order_id: &str, customer: &str, status: &str, shipping: i64, lines: &[SeedLine]) -> Order {
    let lines: Vec<OrderLine> = lines
        .iter()
        .map(|&(sku, name, quantity, unit_price)| OrderLine {
            sku: Sku::parse(sku).expect("seed SKUs are well formed"),
            name: name.to_owned(),
            quantity,
            unit_price: Cents(unit_price),
        })
        .collect();
    let total = lines.iter().map(|line| line.unit_price.0 * i64::from(line.quantity)).sum::<i64>() + shipping;
    Order {
        order_id: OrderId::parse(order_id).expect("seed order IDs are well formed"),
        customer: customer.to_owned(),
        status: status.to_owned(),
        lines,
        shipping: Cents(shipping),
        total: Cents(total),
        currency: CURRENCY.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_orders_have_the_agreed_totals() {
        let totals: Vec<(String, String)> =
            orders().iter().map(|o| (o.order_id.to_string(), o.total.to_string())).collect();
        let expect = |id: &str, total: &str| {
            assert!(totals.contains(&(id.to_owned(), total.to_owned())), "{id} should total {total}: {totals:?}");
        };
        expect("O-1145", "343.49");
        expect("O-2289", "180.00");
        expect("O-1021", "39.90");
        expect("O-3310", "68.40");
        expect("O-3471", "66.85");
        expect("O-4102", "95.50");
        expect("O-5150", "472.00");
    }

    #[test]
    fn load_orders_are_numbered_upwards_and_held_whole() {
        let orders: Vec<Order> = load_orders(0, 3).collect();
        let ids: Vec<&str> = orders.iter().map(|o| o.order_id.as_str()).collect();
        assert_eq!(ids, ["O-100001", "O-100002", "O-100003"]);
        assert!(orders.iter().all(|o| o.total == Cents(18000)));
    }
}
