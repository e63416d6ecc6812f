//! A PostgreSQL database of one test's own, on the server `SHOP_TEST_POSTGRES` names: made for
//! the test, dropped when it passes; without a server, the test is skipped with a line saying
//! how to run it.

#![allow(dead_code)] // each test binary that includes this module uses what it needs of it

use shop_api::PgStore;
use tokio_postgres::NoTls;

/// A database of this test's own, dropped by [`Scratch::drop_now`].
pub struct Scratch {
    server: String,
    name: String,
}

impl Scratch {
    /// A new database on `SHOP_TEST_POSTGRES`'s server; `None`, said, without one.
    pub async fn new() -> Option<Scratch> {
        let Ok(server) = std::env::var("SHOP_TEST_POSTGRES") else {
            eprintln!(
                "skipped on PostgreSQL: set SHOP_TEST_POSTGRES (such as postgres://postgres@127.0.0.1:5432) to run it there"
            );
            return None;
        };
        let name = format!("fernhill_test_{:016x}", rand_u64());
        admin(&server).await.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
        Some(Scratch { server, name })
    }

    pub fn url(&self) -> String {
        format!("{}/{}", self.server, self.name)
    }

    pub async fn connect(&self) -> PgStore {
        PgStore::connect(&self.url()).await.unwrap()
    }

    /// A plain connection, for what the test itself reads or writes.
    pub async fn sql(&self) -> tokio_postgres::Client {
        connect(&self.url()).await
    }

    pub async fn drop_now(self) {
        admin(&self.server).await.batch_execute(&format!("DROP DATABASE {} WITH (FORCE)", self.name)).await.unwrap();
    }
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    RandomState::new().hash_one(std::time::SystemTime::now())
}

async fn connect(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

async fn admin(server: &str) -> tokio_postgres::Client {
    connect(&format!("{server}/postgres")).await
}
