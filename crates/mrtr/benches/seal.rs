//! What sealing costs: the `v1.` codec alone (as the Python SDK's codec was measured), the
//! whole state with its claims, and the argument digest. `benches/python_codec.py` times the
//! Python SDK's codec on the same payload, for a side-by-side ratio.

use std::{hint::black_box, time::Duration};

use criterion::{Criterion, criterion_group, criterion_main};
use mrtr::{
    request_state::{Binding, Claims, StateSecurity, argument_digest, epoch_seconds},
    seal::KeyRing,
};
use serde_json::json;

/// The claims of the shop's confirmation, as the Python SDK seals them (about 170 bytes).
const PAYLOAD: &[u8] = br#"{"v":1,"iat":1764443000.123456,"exp":1764443600.123456,"m":"tools/call","t":"issue_refund","a":"xy_coxhCc3I5aDgGBjQ-cw","s":"R-0111","aud":"shop"}"#;
const KEY: &[u8] = b"a-benchmark-secret-of-at-least-32-bytes";

fn codec(c: &mut Criterion) {
    let ring = KeyRing::new(&[KEY]).unwrap();
    let token = ring.seal(PAYLOAD);
    c.bench_function("codec seal", |b| b.iter(|| ring.seal(black_box(PAYLOAD))));
    c.bench_function("codec open", |b| b.iter(|| ring.open(black_box(&token)).unwrap()));
}

fn state(c: &mut Criterion) {
    let security = StateSecurity::new(KeyRing::new(&[KEY]).unwrap(), Duration::from_secs(600), Some("shop".into()));
    let arguments = json!({"quote_id": "Q-5001"});
    let binding = Binding::new("tools/call", "issue_refund", Some(&arguments), None);
    let token = security.seal(&Claims::new("R-0111", &binding));
    c.bench_function("state seal (claims + codec)", |b| {
        b.iter(|| security.seal(&Claims::new(black_box("R-0111"), black_box(&binding))))
    });
    c.bench_function("state open (codec + checks)", |b| {
        b.iter(|| security.open(black_box(&token), black_box(&binding), epoch_seconds()).unwrap())
    });
    c.bench_function("argument digest", |b| b.iter(|| argument_digest(Some(black_box(&arguments)))));
}

criterion_group!(benches, codec, state);
criterion_main!(benches);
