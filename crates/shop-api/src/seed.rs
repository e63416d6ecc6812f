//! The orders a new store starts with.

use crate::ids::{OrderId, Sku};
use crate::money::Cents;
use crate::policy::CURRENCY;
use crate::records::{Order, OrderLine};

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

/// The seed orders, with totals computed from their lines.
pub fn orders() -> Vec<Order> {
    ORDERS
        .iter()
        .map(|&(order_id, customer, status, shipping, lines)| {
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
        })
        .collect()
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
}
