//! A call no rule names, passed on to its upstream as its bytes: the gate's shortcut in front of
//! rmcp, for hosts over Streamable HTTP ([`Passthrough`]).
//!
//! Such a call's answer is its upstream's, unchanged both ways; the gate routes it and seals its
//! rounds' states, nothing more. Read and written as typed MCP on both sides (rmcp's server and
//! client, each with its service), it cost the gate three to five times what HAProxy costs
//! standing in the same place (docs/speed.md). So a 2026-07-28 host's `tools/call` of a tool no
//! rule names, served by an upstream that speaks 2026-07-28 over HTTP, is read for what routes
//! it alone (the method, the tool's name, `_meta`'s keys, `requestState`), sent on as it came
//! in one POST through the gate's own HTTP client, and its answer read for a round alone
//! (`input_required`), whose state the boundary's passage seals ([`mrtr::boundary::Passage`])
//! as the boundary seals the typed path's; a retry's state is opened the same way and the
//! upstream's own put in its place.
//!
//! Everything else is handed back to rmcp, untouched, before anything is sent: a request that
//! asks for more than passing (the Tasks extension, which the gate serves itself, or any key
//! this does not read), a state the passage does not open (rmcp's boundary refuses it in its
//! words), headers that do not match the body (rmcp answers -32020), a tool a rule names or
//! `review_approvals`, a tool whose arguments travel in headers, a 2025 host or upstream, an
//! upstream whose URL carries credentials (which rmcp's client sends as basic authentication), a
//! body that is not one such request read whole and strictly (an object at each level, no key
//! twice in its arguments or answers, every string valid; a name or state with escapes), a
//! request not POSTed, or whose `Accept`, `Content-Type` or MCP headers are not exactly what
//! the spec asks. A progress token and a log level pass as they came: at 2026-07-28 the upstream
//! tells a call's notifications on its answer's stream, which is this host's alone, and a
//! streamed answer (SSE) is relayed notification by notification, each written on one `data`
//! line. An answer that is no JSON-RPC response to this request, an upstream that cannot be
//! reached, and a question on the call's stream (which 2026-07-28 forbids) give the host the
//! internal error the typed path gives; an upstream's JSON-RPC error reaches the host as it
//! came, with the HTTP status the serving shell gives that code.

pub mod upstream_http;

use std::{marker::PhantomData, sync::Arc};

use axum::{
    Json,
    body::{Body, Bytes, to_bytes},
    extract::Request,
    http::{HeaderMap, HeaderValue, Method, StatusCode, header, request::Parts},
    response::{IntoResponse, Response},
};
use caller::Principal;
use futures::StreamExt as _;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use mrtr::{
    boundary::{Carried, ErrorCode, Passage},
    request_state::Binding,
};
use serde::{
    Deserialize,
    de::{self, IgnoredAny, value::MapAccessDeserializer},
};
use serde_json::Value;
use sse_stream::Sse;

use crate::{passthrough::upstream_http::UpstreamHttp, server::Gate};

/// The protocol revision whose calls pass as their bytes.
const MODERN: &str = "2026-07-28";
const JSON: HeaderValue = HeaderValue::from_static("application/json");
/// What a client of 2026-07-28 must accept.
const ACCEPTED: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");

/// The gate's calls no rule names, passed on as their bytes.
#[derive(Clone)]
pub struct Passthrough {
    inner: Arc<Lane>,
}

struct Lane {
    gate: Gate,
    passage: Passage,
    client: UpstreamHttp,
}

impl Passthrough {
    /// The lane of `gate`'s calls through `passage` (its boundary's); `None` where the boundary
    /// offers no passage or no upstream speaks 2026-07-28 over HTTP.
    pub fn new(gate: &Gate, passage: Option<Passage>) -> Option<Passthrough> {
        let passage = passage.filter(|_| gate.passes_calls())?;
        let client = UpstreamHttp::new()?;
        Some(Passthrough { inner: Arc::new(Lane { gate: gate.clone(), passage, client }) })
    }

    /// Answer `request` by passing it on, or hand it back untouched for rmcp to serve. Only a
    /// POST is taken, whose body the serving shell has read whole within its size limit and
    /// read timeout already.
    pub async fn answer(&self, request: Request) -> Result<Response, Request> {
        if !offered(request.method(), request.headers()) {
            return Err(request);
        }
        let (parts, body) = request.into_parts();
        let Ok(body) = to_bytes(body, usize::MAX).await else {
            return Ok((StatusCode::BAD_REQUEST, "the body could not be read").into_response());
        };
        match self.inner.sending(&parts, &body) {
            Some(sending) => Ok(self.inner.send(sending).await),
            None => Err(Request::from_parts(parts, Body::from(body))),
        }
    }
}

/// The most an upstream's answer to one call is read, whole or streamed, as rmcp's client reads
/// one message: past it the call fails, and the gate holds no more of it.
const ANSWER_BYTES: usize = 16 << 20;

/// Whether a request's method and headers say it may be a 2026-07-28 `tools/call` to pass: a
/// POST with one `Mcp-Method`, `MCP-Protocol-Version` and `Mcp-Name` each, `Content-Type`
/// `application/json`, an `Accept` naming both JSON and event streams, and no argument in a
/// header. The body is still read, and must say the same.
fn offered(method: &Method, headers: &HeaderMap) -> bool {
    let one = |name: &str| {
        let mut given = headers.get_all(name).iter();
        given.next().filter(|_| given.next().is_none())
    };
    let says = |name: &str, value: &str| one(name).is_some_and(|given| given.as_bytes() == value.as_bytes());
    let accepts = |kind: &str| {
        headers.get_all(header::ACCEPT).iter().filter_map(|value| value.to_str().ok()).any(|value| {
            value.split(',').any(|listed| listed.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case(kind)))
        })
    };
    // An `Accept` with a weight (`;q=0` refuses a type) or a quoted parameter is read by rmcp's
    // own parser, not this plain one.
    let weighed = headers.get_all(header::ACCEPT).iter().any(|value| {
        let value = value.as_bytes();
        value.contains(&b'"') || value.windows(2).any(|pair| pair[0].eq_ignore_ascii_case(&b'q') && pair[1] == b'=')
    });
    let json = one(header::CONTENT_TYPE.as_str())
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/json"));
    method == Method::POST
        && says("mcp-method", "tools/call")
        && says("mcp-protocol-version", MODERN)
        && one("mcp-name").is_some()
        && json
        && accepts("application/json")
        && accepts("text/event-stream")
        && !weighed
        && !headers.keys().any(|name| name.as_str().starts_with("mcp-param-"))
}

/// A `tools/call` as the lane reads it: what routes it, and no key it does not know.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Message<'a> {
    jsonrpc: &'a str,
    id: Id,
    method: &'a str,
    #[serde(borrow)]
    params: Object<Params<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params<'a> {
    name: &'a str,
    #[serde(rename = "arguments", default)]
    _arguments: Option<Object<Strict>>,
    #[serde(rename = "_meta", borrow)]
    meta: Object<Meta<'a>>,
    #[serde(rename = "requestState", default)]
    request_state: Option<&'a str>,
    #[serde(rename = "inputResponses", default)]
    input_responses: Option<Object<Strict>>,
}

/// `_meta` as rmcp reads its keys; any other key hands the call back.
// The log level's type is deprecated with logging (SEP-2577); hosts still send it.
#[allow(deprecated)]
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Meta<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    version: &'a str,
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    capabilities: rmcp::model::ClientCapabilities,
    #[serde(rename = "io.modelcontextprotocol/clientInfo", default)]
    _info: Option<rmcp::model::Implementation>,
    /// Passed on as they came: the upstream's notifications of the call come on its answer's
    /// stream, which is the host's alone, and are relayed as they come.
    #[serde(rename = "io.modelcontextprotocol/logLevel", default)]
    _log_level: Option<rmcp::model::LoggingLevel>,
    #[serde(rename = "progressToken", default)]
    _progress: Option<rmcp::model::ProgressToken>,
}

/// A request's id: an integer or a string, as rmcp reads one (not null).
#[derive(Deserialize, Clone, PartialEq)]
#[serde(untagged)]
enum Id {
    Number(i64),
    Text(String),
}

/// `T` read from a JSON object alone: serde's derived readers take an array too, field by
/// field, which no JSON-RPC peer means.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Object<T>, D::Error> {
        struct Fields<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> de::Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        deserializer.deserialize_map(Fields(PhantomData)).map(Object)
    }
}

/// A JSON value read whole and strictly, and skipped: no key twice in any object (a reader that
/// keeps the first would see another value than one that keeps the last, as the seal's binding
/// does), every string valid UTF-8 without a lone surrogate (serde_json checks a string it
/// hands over, not one it skips).
struct Strict;

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Strict, D::Error> {
        deserializer.deserialize_any(Strictly)
    }
}

struct Strictly;

impl<'de> de::Visitor<'de> for Strictly {
    type Value = Strict;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_str<E>(self, _: &str) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut items: A) -> Result<Strict, A::Error> {
        while items.next_element::<Strict>()?.is_some() {}
        Ok(Strict)
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut entries: A) -> Result<Strict, A::Error> {
        // The first keys in a list searched (most objects have a few, and hashing each cost
        // more than the search), the rest in a set: an object of many keys costs in proportion
        // to them, not their square.
        const LISTED: usize = 16;
        let mut listed = Vec::new();
        let mut set = std::collections::HashSet::new();
        while let Some(Key(key)) = entries.next_key::<Key>()? {
            entries.next_value::<Strict>()?;
            let twice = match listed.len() < LISTED {
                true if listed.contains(&key) => true,
                true => {
                    listed.push(key);
                    false
                }
                false => listed.contains(&key) || !set.insert(key),
            };
            if twice {
                return Err(de::Error::custom("a key twice"));
            }
        }
        Ok(Strict)
    }
}

/// An object's key, borrowed where it holds no escape.
struct Key<'de>(std::borrow::Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Key<'de>, D::Error> {
        struct Text;
        impl<'de> de::Visitor<'de> for Text {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(key.into()))
            }
            fn visit_str<E>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(key.to_owned().into()))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// What the lane reads of a request it may pass.
struct Read<'a> {
    /// The tool's name, as the body gives it (and `Mcp-Name` said).
    name: &'a str,
    id: Id,
    /// The state it carries, sealed.
    request_state: Option<&'a str>,
}

/// What the lane reads of the request `headers` and `body` make, where it may pass it (one
/// 2026-07-28 `tools/call`, every key known, its headers saying what its body says); `None`
/// hands it back.
fn read<'a>(headers: &HeaderMap, body: &'a [u8]) -> Option<Read<'a>> {
    // Every byte UTF-8, those of the members read as rmcp's own types too (`_meta`'s client
    // information), whose unknown members serde_json skips without checking: an upstream whose
    // reader swallows the byte after a bad one could read another call than the one judged.
    let body = std::str::from_utf8(body).ok()?;
    let Object(message): Object<Message> = serde_json::from_str(body).ok()?;
    let Object(Params { name, meta: Object(meta), request_state, input_responses, .. }) = message.params;
    let passes = message.jsonrpc == "2.0"
        && message.method == "tools/call"
        && meta.version == MODERN
        && meta.capabilities.extensions.is_none()
        && (input_responses.is_none() || request_state.is_some())
        && headers.get("mcp-name").is_some_and(|given| given.as_bytes() == name.as_bytes());
    passes.then_some(Read { name, id: message.id, request_state })
}

/// A call the lane passes: where, what, and what its state opened to.
struct Sending<'a> {
    upstream: &'a str,
    url: &'a http::Uri,
    /// The tool's name, as the host's `Mcp-Name` gave it (and the body said).
    name: HeaderValue,
    id: Id,
    body: Bytes,
    /// What a state of this call is bound to: worked out where the call carries one, else
    /// when the answer asks a round.
    binding: Bound,
    /// The retry's state, opened: the upstream's own is in `body` in its place.
    carried: Option<Carried>,
    /// Where the serving shell is told the JSON-RPC error a call ended in.
    error_code: Option<ErrorCode>,
}

/// What a call's states are bound to, or what it is worked out from.
enum Bound {
    Known(Binding),
    /// The host's body, and the principal its token names.
    From(Bytes, Option<String>),
}

impl Bound {
    fn binding(self) -> Option<Binding> {
        match self {
            Bound::Known(binding) => Some(binding),
            Bound::From(body, principal) => binding(&body, principal),
        }
    }
}

/// What the states of the call `body` carries are bound to, as the boundary binds them: the
/// method, the tool, the arguments (their digest) and the principal.
fn binding(body: &[u8], principal: Option<String>) -> Option<Binding> {
    #[derive(Deserialize)]
    struct Call<'a> {
        #[serde(borrow)]
        params: Named<'a>,
    }
    #[derive(Deserialize)]
    struct Named<'a> {
        name: &'a str,
        #[serde(default)]
        arguments: Option<Value>,
    }
    let call: Call = serde_json::from_slice(body).ok()?;
    Some(Binding::new("tools/call", call.params.name, call.params.arguments.as_ref(), principal))
}

impl Lane {
    /// The call `parts` and `body` carry, where the lane passes it: `None` hands it back.
    fn sending<'a>(&'a self, parts: &Parts, body: &Bytes) -> Option<Sending<'a>> {
        let Read { name, id, request_state } = read(&parts.headers, body)?;
        let name_header = parts.headers.get("mcp-name")?.clone();
        let (upstream, url) = self.gate.passes_at(name)?;
        let principal = Principal::of(&parts.extensions).map(Principal::to_string);
        let (body, binding, carried) = match request_state {
            None => (body.clone(), Bound::From(body.clone(), principal), None),
            Some(token) => {
                let binding = binding(body, principal)?;
                let carried = self.passage.open(token, &binding)?;
                let state = serde_json::to_string(&carried.state).ok()?;
                (spliced(body, token, &state)?, Bound::Known(binding), Some(carried))
            }
        };
        let error_code = parts.extensions.get::<ErrorCode>().cloned();
        Some(Sending { upstream, url, name: name_header, id, body, binding, carried, error_code })
    }

    /// Send `sending` on, once, and give its answer as the host is to get it.
    async fn send(&self, sending: Sending<'_>) -> Response {
        let Sending { upstream, url, name, id, body, binding, carried, error_code } = sending;
        let failed = |words: String| failed(upstream, &id, words);
        let mut headers = HeaderMap::with_capacity(5);
        headers.insert(header::CONTENT_TYPE, JSON);
        headers.insert(header::ACCEPT, ACCEPTED);
        headers.insert("mcp-protocol-version", HeaderValue::from_static(MODERN));
        headers.insert("mcp-method", HeaderValue::from_static("tools/call"));
        headers.insert("mcp-name", name.clone());
        let answered = match self.client.post(url, headers, body).await {
            Ok(answered) => answered,
            Err(error) => return failed(error.to_string()),
        };
        let status = answered.status();
        let kind = answered.headers().get(header::CONTENT_TYPE).and_then(|value| value.to_str().ok()).unwrap_or("");
        let kind = kind.trim_start();
        let starts_with = |prefix: &str| kind.get(..prefix.len()).is_some_and(|head| head.eq_ignore_ascii_case(prefix));
        let reading = Reading { passage: self.passage.clone(), binding, carried, id: id.clone() };
        if starts_with("text/event-stream") && status.is_success() {
            tracing::debug!(upstream, tool = ?name, "a call no rule names passed on as its bytes, its answer streamed");
            return streamed(answered, reading, upstream.to_owned());
        }
        if !starts_with("application/json") {
            return failed(format!("HTTP {status}"));
        }
        let message = match http_body_util::Limited::new(answered.into_body(), ANSWER_BYTES).collect().await {
            Ok(message) => message.to_bytes(),
            Err(error) => return failed(error.to_string()),
        };
        match reading.response(message, status) {
            Ok((message, refused)) => {
                tracing::debug!(upstream, tool = ?name, "a call no rule names passed on as its bytes");
                // A refusal gets the status the serving shell gives its code, as the typed path's.
                if let (Some(code), Some(slot)) = (refused, &error_code) {
                    slot.set(code);
                }
                (StatusCode::OK, [(header::CONTENT_TYPE, JSON)], message).into_response()
            }
            Err(words) => failed(words),
        }
    }
}

/// What a passed call's answer is read with: what seals the state of a round it asks, and the
/// request it answers.
struct Reading {
    passage: Passage,
    binding: Bound,
    carried: Option<Carried>,
    id: Id,
}

impl Reading {
    /// The upstream's response `message`, given with `status`, as the host is to get it (a
    /// round's state sealed), and the code of the JSON-RPC error it is, if one; or why it
    /// cannot be given.
    fn response(self, message: Bytes, status: StatusCode) -> Result<(Bytes, Option<i32>), String> {
        let Some(shape) = Shape::of(&message) else { return Err("its answer is no JSON-RPC response".into()) };
        if shape.id.as_ref() != Some(&self.id) {
            return Err("its answer is to another request".into());
        }
        if let Some(Coded { code }) = shape.error {
            return Ok((message, Some(code)));
        }
        if !(shape.result && status.is_success()) {
            return Err(format!("HTTP {status}"));
        }
        let sealed = sealed_round(&self.passage, &message, self.binding, self.carried.as_ref())?;
        Ok((sealed.unwrap_or(message), None))
    }
}

/// An answer streamed as server-sent events, relayed as it comes: its notifications (the
/// progress and log messages the host asked for), each on one `data` line, then its response
/// as [`Reading::response`] gives it, which ends the stream. An event that is no JSON-RPC
/// message (or a comment) is not relayed. A question (which 2026-07-28 forbids there), a broken
/// stream, or one that ends without a response ends it with an error.
fn streamed(answered: http::Response<Incoming>, reading: Reading, upstream: String) -> Response {
    let bounded = http_body_util::Limited::new(answered.into_body(), ANSWER_BYTES).map_err(std::io::Error::other);
    let events = sse_stream::SseStream::new(bounded);
    let relayed = futures::stream::unfold(Some((events, reading, upstream)), |state| async move {
        let (mut events, reading, upstream) = state?;
        let ended = |words: String, reading: Reading| {
            tracing::warn!(upstream, error = %words, "a call to the upstream failed");
            let said = Sse::default().data(error(&upstream, &reading.id, words).to_string());
            Some((Ok::<_, std::convert::Infallible>(said), None))
        };
        loop {
            let event = match events.next().await {
                None => return ended("its stream ended without an answer".into(), reading),
                Some(Err(broke)) => return ended(format!("its stream broke: {broke}"), reading),
                Some(Ok(event)) => event,
            };
            let Some(data) = event.data else { continue };
            match Relayed::of(&data) {
                Relayed::Nothing => continue,
                Relayed::Told(told) => return Some((Ok(Sse::default().data(told)), Some((events, reading, upstream)))),
                Relayed::Asked => {
                    return ended("it asked a question on the call's stream, which 2026-07-28 forbids".into(), reading);
                }
                Relayed::Answered => {
                    let id = reading.id.clone();
                    let answer = reading.response(Bytes::from(data), StatusCode::OK);
                    let line =
                        answer.and_then(|(message, _)| one_line(&message).ok_or("its answer is not JSON".into()));
                    let said = line.unwrap_or_else(|words| {
                        tracing::warn!(upstream, error = %words, "a call to the upstream failed");
                        error(&upstream, &id, words).to_string()
                    });
                    return Some((Ok(Sse::default().data(said)), None));
                }
            }
        }
    });
    let headers = [
        (header::CONTENT_TYPE, "text/event-stream"),
        (header::CACHE_CONTROL, "no-cache"),
        (header::HeaderName::from_static("x-accel-buffering"), "no"),
    ];
    (headers, Body::new(sse_stream::SseBody::new(relayed))).into_response()
}

/// What an event's data on a streamed answer is to the host.
#[derive(Debug, PartialEq)]
enum Relayed {
    /// A notification, relayed: its JSON on one line.
    Told(String),
    /// The response.
    Answered,
    /// A question, which 2026-07-28 forbids on a call's stream.
    Asked,
    /// No JSON-RPC message: not relayed.
    Nothing,
}

impl Relayed {
    fn of(data: &str) -> Relayed {
        let Ok(Object(shape)) = serde_json::from_str::<Object<Shape>>(data) else { return Relayed::Nothing };
        match (shape.id.is_some(), shape.method.is_some()) {
            (true, false) => Relayed::Answered,
            (true, true) => Relayed::Asked,
            (false, true) => one_line(data.as_bytes()).map_or(Relayed::Nothing, Relayed::Told),
            (false, false) => Relayed::Nothing,
        }
    }
}

/// `json` as the text of one SSE `data` line: as it came where it holds no line break, else
/// written again compactly (JSON's line breaks are whitespace, or escaped within strings).
fn one_line(json: &[u8]) -> Option<String> {
    if !json.iter().any(|byte| matches!(byte, b'\n' | b'\r')) {
        return String::from_utf8(json.to_vec()).ok();
    }
    serde_json::from_slice::<Value>(json).ok().map(|value| value.to_string())
}

/// What a JSON-RPC message from the upstream is: whether it answers (a result or an error) and
/// which request, or asks (a method).
#[derive(Deserialize)]
struct Shape {
    #[serde(default)]
    id: Option<Id>,
    #[serde(default)]
    method: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present")]
    result: bool,
    #[serde(default)]
    error: Option<Coded>,
}

/// A JSON-RPC error, read for its code.
#[derive(Deserialize)]
struct Coded {
    code: i32,
}

fn present<'de, D: de::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(deserializer).map(|_| true)
}

impl Shape {
    /// `message`'s shape, where it is a response (an id, no method, a result or an error);
    /// `None` otherwise.
    fn of(message: &[u8]) -> Option<Shape> {
        let Object(shape): Object<Shape> = serde_json::from_slice(message).ok()?;
        let answers = shape.id.is_some() && shape.method.is_none() && (shape.result != shape.error.is_some());
        answers.then_some(shape)
    }
}

/// A round's answer as it is read for its state.
#[derive(Deserialize)]
struct Answer<'a> {
    #[serde(default, borrow)]
    result: Option<Round<'a>>,
}

#[derive(Deserialize)]
struct Round<'a> {
    #[serde(rename = "resultType", default)]
    result_type: Option<&'a str>,
    #[serde(rename = "requestState", default)]
    request_state: Option<&'a str>,
}

/// `message` with the state of the round it asks (`input_required`) sealed through `passage`,
/// bound as `binding` says, in the round after `carried`'s; `None` where it asks none.
fn sealed_round(
    passage: &Passage,
    message: &Bytes,
    binding: Bound,
    carried: Option<&Carried>,
) -> Result<Option<Bytes>, String> {
    // A result type is spelt out, or escaped (`\u`): a message with neither asks no round.
    let finder = |needle: &[u8]| memchr::memmem::find(message, needle).is_some();
    if !finder(b"input_required") && !finder(b"\\u") {
        return Ok(None);
    }
    // Read strictly first: a key twice would be read one way here and maybe another at the host.
    serde_json::from_slice::<Strict>(message).map_err(|_| "its answer is not JSON read whole".to_owned())?;
    let seal = |state: &str| {
        let binding = binding.binding().ok_or("the call's arguments could not be read again")?;
        Ok::<_, String>(passage.seal(state, &binding, carried))
    };
    if let Ok(Answer { result: Some(round) }) = serde_json::from_slice::<Answer>(message) {
        return match (round.result_type, round.request_state) {
            (Some("input_required"), Some(state)) => {
                let sealed = serde_json::to_string(&seal(state)?).map_err(|error| error.to_string())?;
                spliced(message, state, &sealed).map(Some).ok_or_else(|| "its round could not be sealed".to_owned())
            }
            _ => Ok(None),
        };
    }
    // Escapes in the state, or a state that is no string: read whole, as a host's reader would.
    let mut whole: Value = serde_json::from_slice(message).map_err(|_| "its answer is not JSON".to_owned())?;
    let Some(result) = whole.get_mut("result").and_then(Value::as_object_mut) else { return Ok(None) };
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return Ok(None);
    }
    let state = match result.get("requestState") {
        None => return Ok(None),
        Some(Value::String(state)) => state,
        Some(_) => return Err("its round's state is not a string".into()),
    };
    let sealed = seal(state)?;
    result.insert("requestState".into(), Value::String(sealed));
    serde_json::to_vec(&whole).map(|bytes| Some(Bytes::from(bytes))).map_err(|error| error.to_string())
}

/// `message` with the JSON string whose text is `inner` (borrowed from `message`, so it holds
/// no escapes) replaced by `string` (a JSON string, quotes included).
fn spliced(message: &Bytes, inner: &str, string: &str) -> Option<Bytes> {
    let start = (inner.as_ptr() as usize).checked_sub(message.as_ptr() as usize)?;
    let end = start + inner.len();
    let quoted = start >= 1 && message.get(start - 1) == Some(&b'"') && message.get(end) == Some(&b'"');
    if !quoted {
        return None;
    }
    let mut out = Vec::with_capacity(message.len() + string.len());
    out.extend_from_slice(&message[..start - 1]);
    out.extend_from_slice(string.as_bytes());
    out.extend_from_slice(&message[end + 1..]);
    Some(Bytes::from(out))
}

/// The error the host gets for a passed call whose upstream gave no answer it could read: the
/// typed path's words, logged as it logs them.
fn failed(upstream: &str, id: &Id, words: String) -> Response {
    tracing::warn!(upstream, error = %words, "a call to the upstream failed");
    Json(error(upstream, id, words)).into_response()
}

/// The JSON-RPC error answering the request `id` when its upstream gave no answer to pass.
fn error(upstream: &str, id: &Id, words: String) -> Value {
    let id = match id {
        Id::Number(number) => Value::from(*number),
        Id::Text(text) => Value::String(text.clone()),
    };
    let message = format!("upstream {upstream} did not answer: {words}");
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}})
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mrtr::{boundary::Sealed, request_state::StateSecurity, seal::KeyRing};
    use serde_json::json;

    use super::*;

    fn headers(name: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("mcp-method", HeaderValue::from_static("tools/call"));
        headers.insert("mcp-protocol-version", HeaderValue::from_static(MODERN));
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert("mcp-name", HeaderValue::from_str(name).unwrap());
        headers.insert(header::ACCEPT, ACCEPTED);
        headers
    }

    fn meta() -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}})
    }

    fn call(params: Value) -> String {
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}).to_string()
    }

    #[test]
    fn only_a_2026_tools_call_posted_with_the_headers_the_spec_asks_is_offered_to_the_lane() {
        assert!(offered(&Method::POST, &headers("pay")));
        // A body sent with another method never passes: the serving shell bounds a POST's alone.
        assert!(!offered(&Method::GET, &headers("pay")));
        let mut without_method = headers("pay");
        without_method.remove("mcp-method");
        let mut of_2025 = headers("pay");
        of_2025.insert("mcp-protocol-version", HeaderValue::from_static("2025-11-25"));
        let mut not_json = headers("pay");
        not_json.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        // An argument in a header: rmcp checks it against the body, and writes it upstream.
        let mut with_a_parameter = headers("pay");
        with_a_parameter.insert("mcp-param-invoice", HeaderValue::from_static("I-1"));
        let mut two_names = headers("pay");
        two_names.append("mcp-name", HeaderValue::from_static("touch"));
        let mut json_lines = headers("pay");
        json_lines.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/jsonl"));
        let mut json_alone = headers("pay");
        json_alone.insert(header::ACCEPT, JSON);
        let mut charset = headers("pay");
        charset.insert(header::CONTENT_TYPE, HeaderValue::from_static("Application/JSON; charset=utf-8"));
        assert!(offered(&Method::POST, &charset));
        for refused in [without_method, of_2025, not_json, with_a_parameter, two_names, json_lines, json_alone] {
            assert!(!offered(&Method::POST, &refused), "{refused:?}");
        }
        // What else a determined caller tries: each goes to rmcp, whose own checks answer it.
        let with = |name: &'static str, value: &'static str, append: bool| {
            let mut tried = headers("pay");
            match append {
                true => tried.append(name, HeaderValue::from_static(value)),
                false => tried.insert(name, HeaderValue::from_static(value)).is_some(),
            };
            tried
        };
        let mut no_type = headers("pay");
        no_type.remove(header::CONTENT_TYPE);
        for refused in [
            no_type,
            with("content-type", "application/json", true),
            with("content-type", "application/json-seq", false),
            with("content-type", "text/json", false),
            with("content-type", "application/json, text/plain", false),
            with("mcp-method", "Tools/Call", false),
            with("mcp-method", "tools/call", true),
            with("mcp-protocol-version", MODERN, true),
            // A weight refusing a type, or a quoted parameter: rmcp's parser reads those.
            with("accept", "application/json, text/event-stream;q=0", false),
            with("accept", "application/json, text/event-stream;x=\"a,b\"", false),
        ] {
            assert!(!offered(&Method::POST, &refused), "{refused:?}");
        }
    }

    #[test]
    fn a_body_that_is_not_one_strict_json_object_in_utf_8_is_handed_back() {
        let body = call(json!({"name": "pay", "_meta": meta()}));
        assert!(read(&headers("pay"), body.as_bytes()).is_some());
        assert!(read(&headers("pay"), format!(" \r\n\t{body}\n").as_bytes()).is_some(), "JSON's own whitespace");
        for refused in [
            format!("\u{feff}{body}"),
            format!("\x0c{body}"),
            format!("{body}x"),
            format!("{body}{body}"),
            format!("{body}\0"),
            format!("[{body}]"),
        ] {
            assert!(read(&headers("pay"), refused.as_bytes()).is_none(), "{refused:?}");
        }
        // A byte that is not UTF-8 in a member read as rmcp's type (whose unknown members
        // serde_json skips unchecked), and in the arguments.
        let mut meta = meta();
        meta["io.modelcontextprotocol/clientInfo"] = json!({"name": "h", "version": "1", "x": "__"});
        let in_client_info = json!({"name": "pay", "_meta": meta});
        let in_arguments = json!({"name": "pay", "arguments": {"memo": "__"}, "_meta": super::tests::meta()});
        for params in [in_client_info, in_arguments] {
            let mut bytes = call(params.clone()).into_bytes();
            let start = bytes.windows(2).position(|pair| pair == b"__").unwrap();
            bytes[start] = 0xff;
            assert!(read(&headers("pay"), &bytes).is_none(), "{params}");
        }
    }

    #[test]
    fn a_call_passes_only_with_every_key_known_and_its_name_the_one_its_header_says() {
        let plain = call(json!({"name": "pay", "arguments": {"invoice": "I-1"}, "_meta": meta()}));
        let read_plain = read(&headers("pay"), plain.as_bytes()).expect("a plain call passes");
        assert_eq!((read_plain.name, read_plain.request_state), ("pay", None));
        let mut told = meta();
        told["progressToken"] = json!("host-1");
        told["io.modelcontextprotocol/logLevel"] = json!("info");
        let retry = call(json!({"name": "pay", "_meta": told, "requestState": "sealed", "inputResponses": {}}));
        assert_eq!(read(&headers("pay"), retry.as_bytes()).map(|read| read.request_state), Some(Some("sealed")));

        let mut with_tasks = meta();
        with_tasks["io.modelcontextprotocol/clientCapabilities"] =
            json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
        let mut unknown_meta = meta();
        unknown_meta["io.modelcontextprotocol/other"] = json!(1);
        let mut of_2025 = meta();
        of_2025["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
        let handed_back = [
            ("another tool named in the header", call(json!({"name": "pay", "_meta": meta()})), "touch"),
            (
                "the name twice",
                format!(
                    r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"touch","name":"pay","_meta":{}}}}}"#,
                    meta()
                ),
                "pay",
            ),
            ("a key it does not read", call(json!({"name": "pay", "task": {}, "_meta": meta()})), "pay"),
            ("a _meta key it does not read", call(json!({"name": "pay", "_meta": unknown_meta})), "pay"),
            ("the Tasks extension", call(json!({"name": "pay", "_meta": with_tasks})), "pay"),
            ("another era in _meta", call(json!({"name": "pay", "_meta": of_2025})), "pay"),
            ("answers without a state", call(json!({"name": "pay", "inputResponses": {}, "_meta": meta()})), "pay"),
            ("arguments not an object", call(json!({"name": "pay", "arguments": [1], "_meta": meta()})), "pay"),
            ("no _meta", call(json!({"name": "pay"})), "pay"),
            (
                "a name with an escape",
                call(json!({"name": "pay", "_meta": meta()})).replace(r#""name":"pay""#, r#""name":"pa\u0079""#),
                "pay",
            ),
            (
                "a fractional id",
                call(json!({"name": "pay", "_meta": meta()})).replace(r#""id":3"#, r#""id":3.5"#),
                "pay",
            ),
            ("a null id", call(json!({"name": "pay", "_meta": meta()})).replace(r#""id":3"#, r#""id":null"#), "pay"),
            (
                "another method",
                call(json!({"name": "pay", "_meta": meta()})).replace("tools/call", "prompts/get"),
                "pay",
            ),
            ("not JSON-RPC 2.0", call(json!({"name": "pay", "_meta": meta()})).replace(r#""2.0""#, r#""1.0""#), "pay"),
            (
                "an array for a body",
                format!(r#"["2.0",3,"tools/call",{}]"#, json!({"name": "pay", "_meta": meta()})),
                "pay",
            ),
            ("an array for params", call(json!(["pay", null, meta()])), "pay"),
            (
                "a key it does not read beside params",
                call(json!({"name": "pay", "_meta": meta()})).replace(r#""id":3"#, r#""id":3,"x":1"#),
                "pay",
            ),
            (
                "an argument twice",
                call(json!({"name": "pay", "arguments": {"invoice": "I-1"}, "_meta": meta()}))
                    .replace(r#""invoice":"I-1""#, r#""invoice":"I-1","invoice":"I-2""#),
                "pay",
            ),
            (
                "a lone surrogate in an argument",
                call(json!({"name": "pay", "arguments": {"invoice": "I-1"}, "_meta": meta()}))
                    .replace("I-1", r"I-\ud800"),
                "pay",
            ),
            (
                "capabilities of the wrong shape",
                call(json!({"name": "pay", "_meta": meta()}))
                    .replace(r#"clientCapabilities":{}"#, r#"clientCapabilities":{"elicitation":5}"#),
                "pay",
            ),
        ];
        for (why, body, header) in handed_back {
            assert!(read(&headers(header), body.as_bytes()).is_none(), "passed with {why}: {body}");
        }
    }

    #[test]
    fn a_key_twice_is_found_among_few_keys_and_among_many() {
        let object = |keys: &[usize]| {
            let entries: Vec<String> = keys.iter().map(|key| format!(r#""k{key}":{key}"#)).collect();
            format!("{{{}}}", entries.join(","))
        };
        let strict = |text: &str| serde_json::from_str::<Strict>(text).is_ok();
        let many: Vec<usize> = (0..40).collect();
        assert!(strict(&object(&many)), "forty keys, each once");
        for (first, again) in [(0, 3), (2, 15), (5, 16), (15, 39), (17, 20), (30, 39)] {
            let mut keys = many[..=again].to_vec();
            keys[again] = first;
            assert!(!strict(&object(&keys)), "key {first} again at {again}");
            assert!(!strict(&format!("[{{}}, {{\"deep\": {}}}]", object(&keys))), "nested, key {first} at {again}");
        }
    }

    fn passage() -> Passage {
        let security = StateSecurity::new(KeyRing::ephemeral(), Duration::from_secs(600), None);
        Sealed::new((), Arc::new(security)).passage().unwrap()
    }

    fn bound() -> Binding {
        Binding::new("tools/call", "pay", Some(&json!({"invoice": "I-1"})), None)
    }

    /// `answer`, as the lane gives it to the host.
    fn given(passage: &Passage, answer: &str) -> Option<Value> {
        let sealed = sealed_round(passage, &Bytes::from(answer.to_owned()), Bound::Known(bound()), None).unwrap();
        sealed.map(|bytes| serde_json::from_slice(&bytes).unwrap())
    }

    #[test]
    fn a_round_the_upstream_asks_is_given_with_its_state_sealed_in_place_and_any_other_answer_as_it_came() {
        let passage = passage();
        let asks = json!({"confirm": {"method": "elicitation/create", "params": {"message": "Pay I-1?"}}});
        let round = json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "input_required", "inputRequests": asks, "requestState": "confirming I-1"}});
        let sealed = given(&passage, &round.to_string()).expect("a round's state is sealed");
        let state = sealed["result"]["requestState"].as_str().unwrap();
        assert!(!state.contains("confirming"), "{state}");
        assert_eq!(passage.open(state, &bound()).map(|carried| carried.state), Some("confirming I-1".into()));
        let mut unsealed = sealed.clone();
        unsealed["result"]["requestState"] = json!("confirming I-1");
        assert_eq!(unsealed, round, "the rest of the round passes as it came");
        // A state with escapes, and a result type spelt with one, are read whole and sealed too.
        let escaped = round
            .to_string()
            .replace("confirming I-1", r#"say \"yes\""#)
            .replace("input_required", r"input\u005frequired");
        let sealed = given(&passage, &escaped).expect("an escaped round's state is sealed");
        let state = sealed["result"]["requestState"].as_str().unwrap();
        assert_eq!(passage.open(state, &bound()).map(|carried| carried.state), Some(r#"say "yes""#.into()));
        // A complete result that only mentions a round, and an error, pass as they came.
        let complete = json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete", "content": [{"type": "text", "text": "no input_required here, \u{e9}"}]}});
        assert_eq!(given(&passage, &complete.to_string()), None);
        assert_eq!(given(&passage, &serde_json::to_string(&complete).unwrap().replace('\u{e9}', r"\u00e9")), None);
        assert_eq!(
            given(&passage, r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"input_required"}}"#),
            None
        );
    }

    #[test]
    fn a_round_read_two_ways_or_whose_state_is_no_string_is_not_given() {
        let passage = passage();
        let twice = r#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","requestState":"bare","resultType":"complete"}}"#;
        let given = |answer: &str| sealed_round(&passage, &Bytes::from(answer.to_owned()), Bound::Known(bound()), None);
        assert!(given(twice).is_err(), "a result type twice passed");
        let numbered = r#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"input_required","requestState":7}}"#;
        assert!(given(numbered).is_err(), "a state that is no string passed");
    }

    #[test]
    fn a_streamed_answers_notifications_are_relayed_on_one_line_and_nothing_else_is() {
        let told =
            "{\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"notifications/progress\",\n  \"params\": {\"progress\": 1}\n}";
        assert_eq!(
            Relayed::of(told),
            Relayed::Told(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#.into())
        );
        let plain = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#;
        assert_eq!(Relayed::of(plain), Relayed::Told(plain.into()));
        assert_eq!(Relayed::of("junk\n\n{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}"), Relayed::Nothing);
        assert_eq!(Relayed::of(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#), Relayed::Answered);
        assert_eq!(
            Relayed::of(r#"{"jsonrpc":"2.0","id":9,"method":"elicitation/create","params":{}}"#),
            Relayed::Asked
        );
    }

    #[test]
    fn only_a_response_is_given_to_the_host_as_its_answer() {
        let shape =
            |message: &str| Shape::of(message.as_bytes()).map(|shape| (shape.result, shape.error.map(|e| e.code)));
        assert_eq!(shape(r#"{"jsonrpc":"2.0","id":3,"result":{}}"#), Some((true, None)));
        assert_eq!(
            shape(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"no"}}"#),
            Some((false, Some(-32602)))
        );
        assert_eq!(shape(r#"{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"both"}}"#), None);
        assert_eq!(shape(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"whose?"}}"#), None);
        assert_eq!(shape(r#"["2.0",3,null,true]"#), None);
        assert_eq!(shape(r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#), None);
        assert_eq!(shape(r#"{"jsonrpc":"2.0","id":9,"method":"elicitation/create","params":{}}"#), None);
        assert_eq!(shape("<html>"), None);
    }
}
