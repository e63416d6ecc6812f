//! The API on PostgreSQL: two API replicas on one database deciding an order's lines and limit
//! atomically, its migrations and its sweep (the money rules themselves are `money_rules.rs`'s,
//! on each database). Each test makes a database of its own on
//! the PostgreSQL `SHOP_TEST_POSTGRES` names (the heavy tier sets it, by default
//! postgres://postgres@127.0.0.1:5432) and drops it when it passes; without one, each test is
//! skipped with a word, so the plain `cargo test` needs Rust alone.

use shop_api::{Cents, PgStore, QuoteRequest, RefundStatus, RunningApi, ShopApi, Sku, spawn_loopback, store::Clock};
mod scratch;

use scratch::Scratch;

/// An API replica on `store`, and a client of it with the service credential.
async fn replica(store: PgStore) -> (RunningApi, ShopApi) {
    let api = spawn_loopback(store).await.unwrap();
    let shop = ShopApi::new(&api.url).unwrap().with_token(api.token.clone());
    (api, shop)
}

/// The lead the MCP server names as deciding.
fn lead() -> shop_api::Party {
    shop_api::Party::host_user("lead-1")
}

fn whole(order: &str) -> QuoteRequest {
    QuoteRequest { order_id: order.parse().unwrap(), skus: None, include_shipping: None }
}

/// Sixteen callers, half through each of two API replicas on one database, each quote the same
/// line and issue their quote at once: the line is refunded once; every other caller is
/// refused with a 409 naming the refund that has it.
#[tokio::test]
async fn two_replicas_on_one_database_refund_a_line_once_however_sixteen_callers_race() {
    let Some(db) = Scratch::new().await else { return };
    // Both start at once: the migration runs once, under its lock.
    let (a, b) = tokio::join!(db.connect(), db.connect());
    let (_a, a) = replica(a).await;
    let (_b, b) = replica(b).await;
    let migrations = db.sql().await.query_one("SELECT COUNT(*) FROM schema_migrations", &[]).await.unwrap();
    assert_eq!(migrations.get::<_, i64>(0), shop_api::store::postgres::MIGRATIONS.len() as i64);
    let request = QuoteRequest {
        order_id: "O-1145".parse().unwrap(),
        skus: Some(vec![Sku::parse("GG-2210").unwrap()]),
        include_shipping: None,
    };
    let calls: Vec<_> = (0..16)
        .map(|i| {
            let (shop, request) = ([&a, &b][i % 2].clone(), request.clone());
            tokio::spawn(async move {
                let quote = shop.create_quote(&request).await?;
                shop.create_refund(&quote.quote_id).await
            })
        })
        .collect();
    let (mut issued, mut refused) = (Vec::new(), 0);
    for call in calls {
        match call.await.unwrap() {
            Ok(refund) => issued.push(refund),
            Err(error) => {
                assert_eq!((error.status(), error.kind()), (Some(409), Some("already_refunded")), "{error}");
                refused += 1;
            }
        }
    }
    assert_eq!((issued.len(), refused), (1, 15));
    let refunds = b.refunds().await.unwrap();
    assert_eq!(refunds.iter().filter(|r| r.status != RefundStatus::Cancelled).count(), 1, "{refunds:?}");
    assert_eq!(refunds[0].amount, Cents(8500));
    db.drop_now().await;
}

/// Orders of three lines of 60.00 (180.00 in all, above the 150.00 limit). Each line is
/// quoted and issued at once, through either of two replicas: whatever the order in which
/// they land, at most 150.00 of an order goes out without a lead, and the rest is held.
#[tokio::test]
async fn an_orders_limit_holds_however_its_refunds_are_split_across_replicas() {
    const ORDERS: i64 = 24;
    let Some(db) = Scratch::new().await else { return };
    let (_a, a) = replica(db.connect().await).await;
    let (_b, b) = replica(db.connect().await).await;
    let sql = db.sql().await;
    for n in 0..ORDERS {
        let order_id = format!("O-9{n:05}");
        sql.execute(
            "INSERT INTO orders (order_id, customer, status, shipping_cents, currency) VALUES ($1, 'Test', 'delivered', 0, 'EUR')",
            &[&order_id],
        )
        .await
        .unwrap();
        for (position, sku) in (0i32..).zip(["KG-0001", "KG-0002", "KG-0003"]) {
            sql.execute(
                "INSERT INTO order_lines (order_id, position, sku, name, quantity, unit_price_cents)
                 VALUES ($1, $2, $3, 'Test line', 1, 6000)",
                &[&order_id, &position, &sku],
            )
            .await
            .unwrap();
        }
    }
    let mut calls = Vec::new();
    for n in 0..ORDERS {
        for (i, sku) in ["KG-0001", "KG-0002", "KG-0003"].into_iter().enumerate() {
            let shop = [&a, &b][(n as usize + i) % 2].clone();
            let request = QuoteRequest {
                order_id: format!("O-9{n:05}").parse().unwrap(),
                skus: Some(vec![Sku::parse(sku).unwrap()]),
                include_shipping: Some(false),
            };
            calls.push(tokio::spawn(async move {
                let quote = shop.create_quote(&request).await?;
                shop.create_refund(&quote.quote_id).await
            }));
        }
    }
    for call in calls {
        call.await.unwrap().unwrap();
    }
    let refunds = a.refunds().await.unwrap();
    assert_eq!(refunds.len(), 3 * ORDERS as usize, "every line refunded once");
    for n in 0..ORDERS {
        let order_id = format!("O-9{n:05}");
        let of_order: Vec<_> = refunds.iter().filter(|r| r.order_id.as_str() == order_id).collect();
        let released: i64 = of_order.iter().filter(|r| r.status == RefundStatus::Requested).map(|r| r.amount.0).sum();
        let held = of_order.iter().filter(|r| r.status == RefundStatus::NeedsConfirmation).count();
        assert_eq!((released, held), (12000, 1), "{order_id}: two lines out without a lead, the third held");
    }
    db.drop_now().await;
}

/// Eight confirms and a cancel of one held refund, sent at once through two replicas: one of
/// them acts, every other is told the refund is not held any more.
#[tokio::test]
async fn decisions_racing_through_two_replicas_act_once() {
    let Some(db) = Scratch::new().await else { return };
    let (_a, a) = replica(db.connect().await).await;
    let (_b, b) = replica(db.connect().await).await;
    let quote = a.create_quote(&whole("O-2289")).await.unwrap();
    let held = a.create_refund(&quote.quote_id).await.unwrap();
    let calls: Vec<_> = (0..9)
        .map(|i| {
            let (shop, refund_id) = ([&a, &b][i % 2].clone(), held.refund_id.clone());
            tokio::spawn(async move {
                match i {
                    4 => shop.cancel(&refund_id).await,
                    _ => shop.confirm(&refund_id, &lead()).await,
                }
            })
        })
        .collect();
    let mut acted = Vec::new();
    for call in calls {
        match call.await.unwrap() {
            Ok(refund) => acted.push(refund.status),
            Err(error) => assert_eq!(error.kind(), Some("not_held"), "{error}"),
        }
    }
    assert_eq!(acted.len(), 1, "{acted:?}");
    assert_eq!(b.refund(&held.refund_id).await.unwrap().status, acted[0]);
    db.drop_now().await;
}

/// A write whose answer was lost, sent again with its key to the other replica, gets the first
/// answer (not a second effect, nor a 409); the same key with another request is refused.
#[tokio::test]
async fn a_write_sent_again_to_another_replica_with_its_idempotency_key_gets_its_first_answer() {
    let Some(db) = Scratch::new().await else { return };
    let (_a, a) = replica(db.connect().await).await;
    let (_b, b) = replica(db.connect().await).await;
    let quote = a.create_quote(&whole("O-2289")).await.unwrap();
    let held = a.create_refund(&quote.quote_id).await.unwrap();
    let key = Some("confirm-R-0111-answer-1");
    let first = a.decide_as_seen(&held.refund_id, "confirm", Some(&lead()), None, key).await.unwrap();
    let again = b.decide_as_seen(&held.refund_id, "confirm", Some(&lead()), None, key).await.unwrap();
    assert_eq!((first.status, &first), (RefundStatus::Requested, &again), "the first answer, told again");
    let without = b.decide(&held.refund_id, "confirm", Some(&lead())).await.unwrap_err();
    assert_eq!(without.kind(), Some("not_held"), "without the key, a second release is refused");
    let other = b.decide_as_seen(&held.refund_id, "cancel", Some(&lead()), None, key).await.unwrap_err();
    assert_eq!((other.status(), other.kind()), (Some(422), Some("idempotency_key_reused")), "{other}");
    db.drop_now().await;
}

/// A held refund past its deadline is cancelled as expired, frees its lines for the next
/// quote and cannot be released; the sweep removes expired quotes that no refund names.
#[tokio::test]
async fn an_expired_refund_frees_its_lines_and_the_sweep_removes_expired_quotes() {
    let Some(db) = Scratch::new().await else { return };
    let (clock, hand) = Clock::manual(std::time::SystemTime::now());
    let store = db.connect().await.with_clock(clock).with_approval_deadline(Some(std::time::Duration::from_secs(60)));
    let (_api, shop) = replica(store.clone()).await;
    let quote = shop.create_quote(&whole("O-2289")).await.unwrap();
    let held = shop.create_refund(&quote.quote_id).await.unwrap();
    hand.advance(std::time::Duration::from_secs(61));
    let expired = shop.confirm(&held.refund_id, &lead()).await.unwrap_err();
    assert_eq!((expired.status(), expired.kind()), (Some(409), Some("not_held")), "{expired}");
    let read = shop.refund(&held.refund_id).await.unwrap();
    assert_eq!((read.status, read.reason.as_deref()), (RefundStatus::Cancelled, Some(shop_api::EXPIRED)));
    let next = shop.create_quote(&whole("O-2289")).await.unwrap();
    assert_eq!(next.amount, Cents(18000), "the lines are free again");

    let sql = db.sql().await;
    sql.execute("UPDATE quotes SET expires_at = 0 WHERE quote_id = $1", &[&next.quote_id.as_str()]).await.unwrap();
    store.sweep(shop_api::idempotency::KEPT).await.unwrap();
    let left: Vec<String> =
        sql.query("SELECT quote_id FROM quotes ORDER BY id", &[]).await.unwrap().iter().map(|r| r.get(0)).collect();
    assert_eq!(left, [quote.quote_id.to_string()], "the expired quote went; the one a refund names stays");
    db.drop_now().await;
}

/// A database whose schema is newer than this build is refused at start, with the reason.
#[tokio::test]
async fn a_database_newer_than_the_build_is_refused() {
    let Some(db) = Scratch::new().await else { return };
    drop(db.connect().await);
    db.sql().await.execute("INSERT INTO schema_migrations (version) VALUES (999)", &[]).await.unwrap();
    let refused = PgStore::connect(&db.url()).await.unwrap_err();
    assert!(refused.to_string().contains("newer than this build"), "{refused}");
    let wrong = PgStore::connect("mysql://nowhere").await.unwrap_err();
    assert!(wrong.to_string().contains("not a PostgreSQL URL"), "{wrong}");
    db.drop_now().await;
}
