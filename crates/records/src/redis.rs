//! [`Redis`]: the records in Redis, shared by every replica that points at the same server,
//! Sentinels' primary or cluster.

use std::time::Duration;

use redis::{
    AsyncCommands, Cmd, RedisFuture, SetExpiry, SetOptions, Value,
    aio::{ConnectionLike, ConnectionManager},
    cluster::ClusterClient,
    cluster_async::ClusterConnection,
    cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr},
    sentinel::{SentinelClient, SentinelServerType},
};
use tokio::sync::{OnceCell, RwLock};

use crate::once_only::{Claim, Claiming, OnceOnly};
use crate::{Pending, Records, RecordsError};

/// Records in Redis, shared by every replica that points at the same server.
///
/// The connection is made on first use and remade after a failure (rmcp-style lazy start), so
/// a server starts while Redis is down, fails closed while it stays down, and works again
/// when it is back. Keys are namespaced by `prefix`.
pub struct Redis {
    source: Source,
    prefix: String,
    url: String,
}

/// Where the connection comes from: one Redis, whichever Redis the Sentinels name primary, or
/// a cluster.
enum Source {
    Direct {
        client: redis::Client,
        connection: OnceCell<ConnectionManager>,
    },
    /// After a failover the old primary refuses writes (`READONLY`) or is gone: the connection
    /// is then dropped, and the next call asks the Sentinels again.
    Sentinel {
        sentinels: tokio::sync::Mutex<SentinelClient>,
        connection: RwLock<Option<ConnectionManager>>,
    },
    /// The library's cluster client sends each key to its slot's primary, follows `MOVED` and
    /// `ASK` (a slot migrating) and learns the topology again when a primary fails over. Every
    /// command and script of the records touches one key, so no hash tag is needed: nothing
    /// here spans two slots.
    Cluster {
        client: ClusterClient,
        connection: OnceCell<ClusterConnection>,
    },
}

/// A connection to the records: one node's, or a cluster's (each key to its slot's primary).
#[derive(Clone)]
pub enum Connection {
    /// One node's (a direct Redis, or the primary the Sentinels named).
    Node(ConnectionManager),
    /// A cluster's.
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Node(node) => node.req_packed_command(cmd),
            Connection::Cluster(cluster) => cluster.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Node(node) => node.req_packed_commands(pipeline, offset, count),
            Connection::Cluster(cluster) => cluster.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Node(node) => node.get_db(),
            Connection::Cluster(cluster) => cluster.get_db(),
        }
    }
}

impl Connection {
    /// Send a command that names no key (`INFO`, `WAIT`) to the node that holds `key`: in a
    /// cluster the library would send it to every primary; one node's is its own.
    pub async fn beside<T: redis::FromRedisValue>(&mut self, cmd: Cmd, key: &str) -> redis::RedisResult<T> {
        match self {
            Connection::Node(node) => cmd.query_async(node).await,
            Connection::Cluster(cluster) => {
                let route = Route::with_key(key, SlotAddr::Master);
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                Ok(redis::from_redis_value(cluster.route_command(cmd, routing).await?)?)
            }
        }
    }
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis").field("url", &self.url).field("prefix", &self.prefix).finish()
    }
}

/// How long a Redis call may take before the caller fails closed.
const REDIS_TIMEOUT: Duration = Duration::from_secs(2);
/// How long to wait before asking Sentinels that named no primary again.
const SENTINEL_PAUSE: Duration = Duration::from_millis(50);

impl Redis {
    /// The Redis a `--store` URL names: Sentinels (`redis+sentinel://`), a cluster
    /// (`redis+cluster://`), or one Redis (`redis://`, `rediss://`, `redis+unix://`,
    /// `unix://`); keys under `prefix`.
    pub fn open(url: &str, prefix: &str) -> Result<Self, RecordsError> {
        if url.starts_with(SENTINEL_SCHEME) {
            Self::sentinel(url, prefix)
        } else if url.starts_with(CLUSTER_SCHEME) {
            Self::cluster(url, prefix)
        } else if ["redis://", "rediss://", "redis+unix://", "unix://"].iter().any(|scheme| url.starts_with(scheme)) {
            Self::new(url, prefix)
        } else {
            Err(super::not_a_store(url))
        }
    }

    /// Records in the Redis at `url` (such as `redis://127.0.0.1:6379`), keys under `prefix`.
    pub fn new(url: &str, prefix: &str) -> Result<Self, RecordsError> {
        let client = redis::Client::open(url).map_err(|e| RecordsError(format!("{url}: {e}")))?;
        let source = Source::Direct { client, connection: OnceCell::new() };
        Ok(Self { source, prefix: prefix.to_owned(), url: redact(url) })
    }

    /// Records in the primary that the Sentinels at `url` name for their service:
    /// `redis+sentinel://HOST:PORT[,HOST:PORT...]/SERVICE` (no credentials: give the Redis
    /// nodes none, or use a `redis://` URL).
    pub fn sentinel(url: &str, prefix: &str) -> Result<Self, RecordsError> {
        let invalid = |why: &str| RecordsError(format!("{url}: {why}"));
        let rest = url.strip_prefix(SENTINEL_SCHEME).ok_or_else(|| invalid("not a redis+sentinel:// URL"))?;
        let (hosts, service) = rest.split_once('/').ok_or_else(|| invalid("no /SERVICE after the Sentinels"))?;
        if service.is_empty() || service.contains('/') {
            return Err(invalid("the service name is one path segment"));
        }
        let nodes: Vec<String> = hosts.split(',').filter(|h| !h.is_empty()).map(|h| format!("redis://{h}")).collect();
        if nodes.is_empty() {
            return Err(invalid("no Sentinel named"));
        }
        let sentinels = SentinelClient::build(nodes, service.to_owned(), None, SentinelServerType::Master)
            .map_err(|e| invalid(&e.to_string()))?;
        let source = Source::Sentinel { sentinels: tokio::sync::Mutex::new(sentinels), connection: RwLock::new(None) };
        Ok(Self { source, prefix: prefix.to_owned(), url: url.to_owned() })
    }

    /// Records in the Redis Cluster that any of the nodes at `url` belongs to:
    /// `redis+cluster://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...]` (the nodes to learn the
    /// topology from; the rest are found). One credential serves every node, as the cluster's
    /// own ACL does.
    pub fn cluster(url: &str, prefix: &str) -> Result<Self, RecordsError> {
        let invalid = |why: &str| RecordsError(format!("{}: {why}", redact(url)));
        let rest = url.strip_prefix(CLUSTER_SCHEME).ok_or_else(|| invalid("not a redis+cluster:// URL"))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (credentials, hosts) = match rest.rsplit_once('@') {
            Some((credentials, hosts)) => (format!("{credentials}@"), hosts),
            None => (String::new(), rest),
        };
        if hosts.contains('/') {
            return Err(invalid("a cluster has one keyspace: no /DATABASE"));
        }
        let nodes: Vec<String> =
            hosts.split(',').filter(|h| !h.is_empty()).map(|h| format!("redis://{credentials}{h}")).collect();
        if nodes.is_empty() {
            return Err(invalid("no cluster node named"));
        }
        let client = ClusterClient::builder(nodes)
            .connection_timeout(REDIS_TIMEOUT)
            .response_timeout(REDIS_TIMEOUT)
            .build()
            .map_err(|e| invalid(&e.to_string()))?;
        let source = Source::Cluster { client, connection: OnceCell::new() };
        Ok(Self { source, prefix: prefix.to_owned(), url: redact(url) })
    }

    /// A connection to the records' storage, made on first use and remade after a failure: for
    /// a store kept beside the records (tasks), whose keys go through [`Redis::key`].
    pub async fn connection(&self) -> Result<Connection, RecordsError> {
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_connection_timeout(Some(REDIS_TIMEOUT))
            .set_response_timeout(Some(REDIS_TIMEOUT))
            .set_number_of_retries(1);
        let unavailable = |e: redis::RedisError| RecordsError(format!("{}: {e}", self.url));
        match &self.source {
            Source::Direct { client, connection } => {
                let connect = || async { client.get_connection_manager_with_config(config).await.map_err(unavailable) };
                connection.get_or_try_init(connect).await.cloned().map(Connection::Node)
            }
            Source::Cluster { client, connection } => {
                let connect = || async {
                    let connecting = client.get_async_connection();
                    tokio::time::timeout(REDIS_TIMEOUT, connecting)
                        .await
                        .map_err(|_| RecordsError(format!("{}: no cluster node answered in time", self.url)))?
                        .map_err(unavailable)
                };
                connection.get_or_try_init(connect).await.cloned().map(Connection::Cluster)
            }
            Source::Sentinel { sentinels, connection } => {
                if let Some(open) = connection.read().await.as_ref() {
                    return Ok(Connection::Node(open.clone()));
                }
                let mut slot = connection.write().await;
                if let Some(open) = slot.as_ref() {
                    return Ok(Connection::Node(open.clone()));
                }
                // The Sentinels get the same bound as Redis: a silent one fails the call closed.
                // Just after a failover they may name no primary for a moment (the new one not
                // yet seen up): asked again within that bound rather than failing the call.
                let asking = async {
                    loop {
                        match sentinels.lock().await.async_get_client().await {
                            Err(error) if error.kind() == redis::ErrorKind::MasterNameNotFoundBySentinel => {
                                tokio::time::sleep(SENTINEL_PAUSE).await;
                            }
                            named => break named,
                        }
                    }
                };
                let primary = tokio::time::timeout(REDIS_TIMEOUT, asking)
                    .await
                    .map_err(|_| RecordsError(format!("{}: the Sentinels did not answer in time", self.url)))?
                    .map_err(unavailable)?;
                let open = primary.get_connection_manager_with_config(config).await.map_err(unavailable)?;
                *slot = Some(open.clone());
                Ok(Connection::Node(open))
            }
        }
    }

    /// Whether writes here are replicated to a Redis that a failover may promote (Sentinels
    /// watch it, or the cluster does): a write the caller must not lose waits for a replica's
    /// acknowledgement ([`Redis::kept`]).
    fn fails_over(&self) -> bool {
        matches!(self.source, Source::Sentinel { .. } | Source::Cluster { .. })
    }

    /// After a write to `key` (a full key, prefix and all) the caller must not lose: a replica
    /// holds it too, so that a failover just after cannot lose it (replication is asynchronous),
    /// or it is taken back and this fails, so that nothing relies on it. Only where a failover
    /// may promote a replica; a primary with no replica connected cannot be failed over, and
    /// waits for none. `INFO` and `WAIT` go to the primary that took the write.
    pub async fn kept(&self, connection: &mut Connection, key: &str) -> Result<(), RecordsError> {
        if !self.fails_over() {
            return Ok(());
        }
        let mut info = redis::cmd("INFO");
        info.arg("replication");
        let replication: String = connection.beside(info, key).await.map_err(|e| self.failed(e))?;
        if connected_replicas(&replication) == 0 {
            return Ok(());
        }
        let mut wait = redis::cmd("WAIT");
        wait.arg(1).arg(REPLICA_WAIT_MS);
        let acknowledged: i64 = connection.beside(wait, key).await.map_err(|e| self.failed(e))?;
        if acknowledged < 1 {
            let _: Result<i64, _> = connection.del(key).await;
            return Err(RecordsError(format!(
                "{}: no replica acknowledged {key} within {REPLICA_WAIT_MS} ms; it was taken back",
                self.url
            )));
        }
        Ok(())
    }

    /// `SET key value PX keep`, the key under the prefix.
    async fn set(
        &self,
        connection: &mut Connection,
        key: &str,
        value: String,
        keep: Duration,
    ) -> Result<(), RecordsError> {
        let options = SetOptions::default().with_expiration(SetExpiry::PX(millis(keep)));
        let _: Option<String> = connection.set_options(key, value, options).await.map_err(|e| self.failed(e))?;
        Ok(())
    }

    /// Run `script` on `key` (the one key it touches, so a cluster routes it) with the
    /// arguments `args` adds: sent whole with EVAL (the client library's script cache is a
    /// feature not built).
    async fn eval<T: redis::FromRedisValue>(
        &self,
        script: &str,
        key: &str,
        args: impl FnOnce(&mut redis::Cmd) -> &mut redis::Cmd,
    ) -> Result<T, RecordsError> {
        let mut connection = self.connection().await?;
        let mut command = redis::cmd("EVAL");
        command.arg(script).arg(1).arg(self.key(key));
        args(&mut command).query_async(&mut connection).await.map_err(|e| self.failed(e))
    }

    /// `key` under this store's prefix, as the records keep it.
    pub fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// `error`, as the records report a storage that did not answer (the URL redacted).
    pub fn failed(&self, error: redis::RedisError) -> RecordsError {
        // A primary that was demoted, or is gone: ask the Sentinels again next time.
        if let Source::Sentinel { connection, .. } = &self.source
            && (error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
                || error.is_io_error()
                || error.is_timeout())
            && let Ok(mut slot) = connection.try_write()
        {
            *slot = None;
        }
        RecordsError(format!("{}: {error}", self.url))
    }
}

/// How long a write the caller must not lose waits for a replica's acknowledgement (`WAIT 1`):
/// a replica on the same network acknowledges in milliseconds, but not always within a hundred.
const REPLICA_WAIT_MS: u64 = 1_000;

/// The replicas `INFO replication` says are connected (`connected_slaves:N`).
fn connected_replicas(replication: &str) -> u64 {
    replication
        .lines()
        .find_map(|line| line.trim().strip_prefix("connected_slaves:"))
        .and_then(|count| count.parse().ok())
        .unwrap_or(0)
}

/// The scheme of a `--store` that names Redis Sentinels.
pub const SENTINEL_SCHEME: &str = "redis+sentinel://";
/// The scheme of a `--store` that names nodes of a Redis Cluster.
pub const CLUSTER_SCHEME: &str = "redis+cluster://";

/// A Redis URL without its password, for logs.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}://…@{}", &url[..scheme], &url[at + 1..]),
        _ => url.to_owned(),
    }
}

fn millis(keep: Duration) -> u64 {
    u64::try_from(keep.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl OnceOnly for Redis {
    fn claim_as<'a>(&'a self, key: &'a str, value: &'a str, keep: Duration) -> Claiming<'a> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            // SET key value NX PX keep: atomic; of any number of concurrent claims, one sets it.
            let options = SetOptions::default()
                .conditional_set(redis::ExistenceCheck::NX)
                .with_expiration(SetExpiry::PX(millis(keep)));
            let set: Option<String> =
                connection.set_options(self.key(key), value, options).await.map_err(|e| self.failed(e))?;
            Ok(if set.is_some() { Claim::First } else { Claim::Taken })
        })
    }

    fn take_over<'a>(&'a self, key: &'a str, seen: &'a str, value: &'a str, keep: Duration) -> Claiming<'a> {
        Box::pin(async move {
            // Compare and set in one step on the server (SET's IFEQ is Redis 8.4's, newer than
            // the servers this runs on).
            let taken: i64 = self.eval(TAKE_OVER, key, |script| script.arg(seen).arg(value).arg(millis(keep))).await?;
            Ok(if taken == 1 { Claim::First } else { Claim::Taken })
        })
    }
}

impl Records for Redis {
    fn put<'a>(&'a self, key: &'a str, value: String, keep: Duration) -> Pending<'a, ()> {
        Box::pin(async move { self.set(&mut self.connection().await?, &self.key(key), value, keep).await })
    }

    fn put_kept<'a>(&'a self, key: &'a str, value: String, keep: Duration) -> Pending<'a, ()> {
        Box::pin(async move {
            let (mut connection, key) = (self.connection().await?, self.key(key));
            self.set(&mut connection, &key, value, keep).await?;
            self.kept(&mut connection, &key).await
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> Pending<'a, Option<String>> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            connection.get(self.key(key)).await.map_err(|e| self.failed(e))
        })
    }

    fn remove<'a>(&'a self, key: &'a str) -> Pending<'a, ()> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            let _: i64 = connection.del(self.key(key)).await.map_err(|e| self.failed(e))?;
            Ok(())
        })
    }

    fn count<'a>(&'a self, key: &'a str, delta: i64, keep: Duration) -> Pending<'a, u64> {
        Box::pin(async move {
            let counted: i64 = self.eval(COUNT, key, |script| script.arg(delta).arg(millis(keep))).await?;
            Ok(u64::try_from(counted).unwrap_or(0))
        })
    }

    fn describe(&self) -> String {
        format!("redis at {}", self.url)
    }
}

/// `count`: add, floor at zero, and give a new count its window, in one step on the server.
const COUNT: &str = "local n = redis.call('INCRBY', KEYS[1], ARGV[1]) \
     if n < 0 then n = 0; redis.call('SET', KEYS[1], 0, 'KEEPTTL') end \
     if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end \
     return n";

/// `take_over`: replace the claim with ARGV[2] for ARGV[3] ms if it still holds ARGV[1].
const TAKE_OVER: &str = "if redis.call('GET', KEYS[1]) == ARGV[1] then \
     redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3]) return 1 end return 0";

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::tests::{one_claim_of_many, one_takeover_of_many};

    /// Against the Redis `REDIS_URL` names (the heavy tier sets it); without one, skipped with
    /// a word, so a plain `cargo test` needs Rust alone.
    #[tokio::test]
    async fn redis_claims_once_and_keeps_values_until_they_expire() {
        let Ok(url) = std::env::var("REDIS_URL") else {
            eprintln!("skipped: set REDIS_URL (such as redis://127.0.0.1:6379) to test the records in Redis");
            return;
        };
        let prefix = format!("mrtr-test:{}:", rand::random::<u64>());
        let records: Arc<dyn Records> = Arc::new(Redis::new(&url, &prefix).unwrap());
        one_claim_of_many(records.clone(), "k".into()).await;
        one_takeover_of_many(records.clone(), "t".into()).await;
        records.put("q", "v".into(), Duration::from_secs(60)).await.unwrap();
        assert_eq!(records.get("q").await.unwrap().as_deref(), Some("v"));
        assert_eq!(records.get("missing").await.unwrap(), None);
        records.remove("q").await.unwrap();
        assert_eq!(records.get("q").await.unwrap(), None);
        records.put("short", "v".into(), Duration::from_millis(1)).await.unwrap();
        // Redis expires keys on its own clock: ask until it has (within a deadline, not for
        // ever). An expired value reads as none, and a claim on an expired key is a new claim.
        records.claim("brief", Duration::from_millis(1)).await.unwrap();
        let expired = async {
            while records.get("short").await.unwrap().is_some() {
                tokio::task::yield_now().await;
            }
            loop {
                if records.claim("brief", Duration::from_millis(1)).await.unwrap() == Claim::First {
                    break;
                }
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), expired).await.expect("Redis expired both keys");
        assert_eq!(records.get("short").await.unwrap(), None, "an expired value is never read back");
        crate::tests::counts(records).await;
    }

    #[tokio::test]
    async fn an_unreachable_redis_fails_every_call() {
        // Port 1 on loopback: nothing listens there.
        let records = Redis::new("redis://127.0.0.1:1", "x:").unwrap();
        assert!(records.claim("k", Duration::from_secs(1)).await.is_err());
        assert!(records.get("k").await.is_err());
        assert_eq!(redact("redis://user:secret@host:6379/0"), "redis://…@host:6379/0");
    }

    #[test]
    fn the_connected_replicas_are_read_from_info() {
        assert_eq!(connected_replicas("# Replication\r\nrole:master\r\nconnected_slaves:2\r\nslave0:ip=…\r\n"), 2);
        assert_eq!(connected_replicas("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"), 0);
        assert_eq!(connected_replicas("role:slave\r\n"), 0);
    }

    #[test]
    fn a_cluster_url_names_its_nodes_and_no_database() {
        assert!(Redis::open("redis+cluster://127.0.0.1:7000,127.0.0.1:7001", "x:").is_ok());
        assert!(Redis::open("redis+cluster://user:secret@127.0.0.1:7000/", "x:").is_ok());
        let refused = |url: &str| Redis::open(url, "x:").unwrap_err().0;
        assert!(refused("redis+cluster://").contains("no cluster node named"));
        let database = refused("redis+cluster://user:secret@127.0.0.1:7000/2");
        assert!(database.contains("no /DATABASE") && !database.contains("secret"), "{database}");
    }
}
