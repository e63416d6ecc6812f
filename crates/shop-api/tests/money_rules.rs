//! The money rules, one suite, run against each database through what the routes talk to
//! (`Database`): SQLite (in memory) always; PostgreSQL in a scratch database of each test's own
//! on the server `SHOP_TEST_POSTGRES` names (the heavy tier sets it), each test skipped with a
//! line that says so without one, so the plain `cargo test` needs Rust alone. What only one
//! database has (SQLite's schema upgrades, PostgreSQL's replicas and migrations) is tested
//! beside that database's store.

use std::time::Duration;

use shop_api::{Cents, Database, PgStore, QuoteRequest, RefundId, RefundStatus, Sku, Store, StoreError, store::Clock};
mod scratch;

use scratch::Scratch;

/// Which database a test runs on.
enum Open {
    Sqlite,
    Postgres(String),
}

/// A controlled clock, for deadlines and expiry.
#[derive(Clone)]
struct Now(Clock, clock::Hand);

impl Now {
    fn start() -> Now {
        let (clock, hand) = Clock::manual(std::time::SystemTime::now());
        Now(clock, hand)
    }

    /// A clock that reads `at`.
    fn at(at: std::time::SystemTime) -> Now {
        let (clock, hand) = Clock::manual(at);
        Now(clock, hand)
    }

    fn clock(&self) -> Clock {
        self.0.clone()
    }

    fn pass(&self, seconds: u64) {
        self.1.advance(Duration::from_secs(seconds));
    }
}

impl Open {
    /// The database, on `now`'s clock, held refunds waiting at most `deadline`.
    async fn database(&self, now: &Now, deadline: Option<Duration>) -> Database {
        match self {
            Open::Sqlite => Store::open(None).unwrap().with_clock(now.clock()).with_approval_deadline(deadline).into(),
            Open::Postgres(url) => {
                PgStore::connect(url).await.unwrap().with_clock(now.clock()).with_approval_deadline(deadline).into()
            }
        }
    }
}

/// Each rule once, as a test on each database.
macro_rules! on_each_database {
    ($( $(#[$attribute:meta])* async fn $name:ident($open:ident: Open) $body:block )*) => {
        mod sqlite {
            use super::*;
            $( $(#[$attribute])* #[tokio::test] async fn $name() { let $open = Open::Sqlite; $body } )*
        }
        mod postgres {
            use super::*;
            $( $(#[$attribute])* #[tokio::test] async fn $name() {
                let Some(scratch) = Scratch::new().await else { return };
                let $open = Open::Postgres(scratch.url());
                $body
                scratch.drop_now().await;
            } )*
        }
    };
}

fn whole(order: &str) -> QuoteRequest {
    QuoteRequest { order_id: order.parse().unwrap(), skus: None, include_shipping: None }
}

fn skus(order: &str, skus: &[&str], shipping: Option<bool>) -> QuoteRequest {
    QuoteRequest {
        order_id: order.parse().unwrap(),
        skus: Some(skus.iter().map(|sku| Sku::parse(sku).unwrap()).collect()),
        include_shipping: shipping,
    }
}

fn lead() -> Option<String> {
    Some(shop_api::Party::host_user("lead-1").to_string())
}

on_each_database! {
    /// The same line quoted and issued twice: one refund, then refusals naming it; the whole
    /// order then quotes only what is left, and nothing once that is refunded too.
    async fn a_line_is_refunded_once(open: Open) {
        let db = open.database(&Now::start(), None).await;
        let first = db.create_quote(skus("O-1145", &["GG-2210"], None)).await.unwrap();
        let second = db.create_quote(skus("O-1145", &["GG-2210"], None)).await.unwrap();
        let (refund, created) = db.create_refund(first.quote_id.clone(), None).await.unwrap();
        assert!(created);
        assert_eq!((refund.refund_id.as_str(), refund.amount, refund.status), ("R-0111", Cents(8500), RefundStatus::Requested));
        let (again, created) = db.create_refund(first.quote_id, None).await.unwrap();
        assert_eq!((again, created), (refund, false), "the quote's refund, not a second");
        let issued_twice = db.create_refund(second.quote_id, None).await.unwrap_err();
        assert_eq!(
            issued_twice.to_string(),
            "Order O-1145 is already refunded or held for refund there (GG-2210 by R-0111); only what is still \
             refundable can be quoted or refunded."
        );
        let rest = db.create_quote(whole("O-1145")).await.unwrap();
        assert_eq!((rest.skus.len(), rest.amount, rest.includes_shipping), (1, Cents(24950 + 899), true));
        db.create_refund(rest.quote_id, None).await.unwrap();
        assert!(matches!(db.create_quote(whole("O-1145")).await, Err(StoreError::AlreadyRefunded { .. })));
    }

    /// Shipping is a line of its own, refunded once.
    async fn shipping_is_refunded_once(open: Open) {
        let db = open.database(&Now::start(), None).await;
        let quote = db.create_quote(skus("O-1145", &["GG-2210"], Some(true))).await.unwrap();
        assert_eq!(quote.amount, Cents(8500 + 899));
        db.create_refund(quote.quote_id, None).await.unwrap();
        let again = db.create_quote(skus("O-1145", &["KG-1043"], Some(true))).await;
        assert!(matches!(again, Err(StoreError::AlreadyRefunded { .. })), "{again:?}");
        let rest = db.create_quote(whole("O-1145")).await.unwrap();
        assert_eq!((rest.amount, rest.includes_shipping), (Cents(24950), false));
    }

    /// Above the limit a refund is held; it is released or cancelled once, and a release is
    /// never undone.
    async fn a_held_refund_is_decided_once(open: Open) {
        let db = open.database(&Now::start(), None).await;
        let quote = db.create_quote(whole("O-2289")).await.unwrap();
        assert!(quote.needs_confirmation);
        let (held, _) = db.create_refund(quote.quote_id, None).await.unwrap();
        assert_eq!(held.status, RefundStatus::NeedsConfirmation);
        let released = db.decide(held.refund_id.clone(), RefundStatus::Requested, lead(), None).await.unwrap();
        assert_eq!((released.status, released.decided_by.clone()), (RefundStatus::Requested, lead()));
        for to in [RefundStatus::Requested, RefundStatus::Cancelled] {
            let refused = db.decide(held.refund_id.clone(), to, lead(), None).await.unwrap_err();
            assert_eq!(refused.to_string(), "Refund R-0111 is not held; its status is requested.");
        }
        let missing = db.decide(RefundId::parse("R-9999").unwrap(), RefundStatus::Requested, lead(), None).await;
        assert!(matches!(missing, Err(StoreError::NoSuchRefund(_))), "{missing:?}");
        assert_eq!(db.refund(held.refund_id).await.unwrap(), released);
    }

    /// A cancelled refund frees its lines for the next quote, which is held again.
    async fn a_cancelled_refund_frees_its_lines(open: Open) {
        let db = open.database(&Now::start(), None).await;
        let quote = db.create_quote(whole("O-2289")).await.unwrap();
        let (held, _) = db.create_refund(quote.quote_id, None).await.unwrap();
        assert!(matches!(db.create_quote(whole("O-2289")).await, Err(StoreError::AlreadyRefunded { .. })));
        db.decide(held.refund_id, RefundStatus::Cancelled, lead(), None).await.unwrap();
        let again = db.create_quote(whole("O-2289")).await.unwrap();
        assert_eq!(again.amount, Cents(18000));
        let (next, _) = db.create_refund(again.quote_id, None).await.unwrap();
        assert_eq!(next.status, RefundStatus::NeedsConfirmation);
    }

    /// Past its deadline a held refund is cancelled as expired, never released, and its lines
    /// are free; one no request touched is cancelled by the sweep.
    async fn no_refund_is_released_after_its_deadline(open: Open) {
        let now = Now::start();
        let db = open.database(&now, Some(Duration::from_secs(60))).await;
        let quote = db.create_quote(whole("O-2289")).await.unwrap();
        let (held, _) = db.create_refund(quote.quote_id, None).await.unwrap();
        let other = db.create_quote(whole("O-5150")).await.unwrap();
        let (waiting, _) = db.create_refund(other.quote_id, None).await.unwrap();
        now.pass(61);
        let late = db.decide(held.refund_id.clone(), RefundStatus::Requested, lead(), None).await.unwrap_err();
        assert_eq!(late.to_string(), "Refund R-0111 is not held; its status is cancelled.");
        let read = db.refund(held.refund_id).await.unwrap();
        assert_eq!((read.status, read.reason.as_deref()), (RefundStatus::Cancelled, Some(shop_api::EXPIRED)));
        assert_eq!(db.create_quote(whole("O-2289")).await.unwrap().amount, Cents(18000), "its lines are free");
        db.sweep(Duration::from_secs(3600)).await.unwrap();
        let swept = db.refund(waiting.refund_id).await.unwrap();
        assert_eq!((swept.status, swept.reason.as_deref()), (RefundStatus::Cancelled, Some(shop_api::EXPIRED)));
    }

    /// A held refund may be decided until its deadline, whatever the fraction of a second it
    /// was asked at: the store keeps whole seconds, and a deadline rounded down passed up to a
    /// second early (one of 3 s was cancelled 2.3 s after it was asked).
    async fn a_held_refund_may_be_decided_until_its_deadline_to_the_second(open: Open) {
        let now = Now::at(std::time::UNIX_EPOCH + Duration::from_millis(1_800_000_000_700));
        let db = open.database(&now, Some(Duration::from_secs(3))).await;
        let quote = db.create_quote(whole("O-2289")).await.unwrap();
        let (held, _) = db.create_refund(quote.quote_id, None).await.unwrap();
        assert_eq!(held.status, RefundStatus::NeedsConfirmation);
        now.1.advance(Duration::from_millis(2_300));
        let decided = db.decide(held.refund_id.clone(), RefundStatus::Requested, lead(), None).await;
        assert!(decided.is_ok(), "2.3 s into a 3 s deadline: {decided:?}");
    }

    /// A quote is issuable for its lifetime, and refused after.
    async fn an_expired_quote_is_refused(open: Open) {
        let now = Now::start();
        let db = open.database(&now, None).await;
        let quote = db.create_quote(whole("O-1021")).await.unwrap();
        now.pass(shop_api::store::DEFAULT_QUOTE_TTL.as_secs() + 1);
        let expired = db.create_refund(quote.quote_id, None).await.unwrap_err();
        assert!(matches!(expired, StoreError::QuoteExpired(_)), "{expired:?}");
    }
}
