//! The gate's approval page: a person who may decide held calls signs in at the gate's issuer
//! and decides them in a browser, the webhook's announcements linking to each. `/approvals`
//! lists the calls waiting for them; `/approvals/H-…` shows one (who asked, the upstream, the
//! tool, its arguments, the rule and by when) with two buttons. A decision goes through the
//! rule's approvals engine, as one at a decider's own host does (`crate::decide`): only a
//! person the rule names, never the requester unless it allows, on the call the page showed
//! (its digest), once.
//!
//! Served beside `/mcp` by `fernhill-gate serve --http` when `--page-client-id` names the
//! page's client at the issuer. The sign-in, the session, its cookies and the checks on a post
//! are the approvals crate's ([`Visitors`]), as the shop's page's are.

use std::sync::Arc;

use approvals::{
    Acted, Channel,
    channel::{
        jwks,
        page::{Callback, Decision, PATH, Visitors, html::Page, unavailable},
        sign_in::{PageClient, Session, SignIn},
    },
};
use axum::{
    Form, Router,
    extract::{Path, Query, State, rejection::FormRejection},
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::get,
};
use caller::Principal;
use mrtr::Outcome;
use web_service::html::escape;

use crate::{
    decide::{Deciding, Listing, NotHere, RunForm, may_decide, told, waiting_for},
    held::{HeldCall, HeldCalls, HeldId},
    policy::Policy,
    policy::person::Person,
    policy::rule::Rule,
};

/// The gate's approval page.
pub struct ApprovalPage {
    visitors: Visitors,
    policy: Arc<Policy>,
    held: Arc<HeldCalls>,
    deciding: Arc<Deciding>,
}

/// How the page's visitors sign in: at the issuer that grants the MCP endpoint's tokens.
pub struct PageSignIn<'a> {
    /// The issuer's URL.
    pub issuer: &'a str,
    /// The page's client ID at the issuer.
    pub client_id: &'a str,
    /// The client's secret, for a confidential client.
    pub client_secret: Option<&'a str>,
    /// The MCP endpoint the page is served for, at its origin; its token is asked for.
    pub endpoint: &'a str,
    /// The scopes asked for, space-separated.
    pub scopes: &'a str,
    /// What seals a sign-in under way into its browser's cookie.
    pub cookies: mrtr::seal::KeyRing,
    /// Where sessions are kept (a fleet's shared, so a visitor's next page may reach any gate).
    pub sessions: Arc<dyn records::Records>,
    /// What checks the endpoint's tokens: it checks the page's too.
    pub resource: &'a oauth_resource::gate::ResourceServer,
}

impl PageSignIn<'_> {
    /// The page's visitors, signed in as this says.
    pub(crate) fn visitors(self) -> Result<Visitors, String> {
        let PageSignIn { issuer, client_id, client_secret, endpoint, scopes, cookies, sessions, resource } = self;
        let origin = http::Uri::try_from(endpoint)
            .ok()
            .and_then(|uri| Some(format!("{}://{}", uri.scheme_str()?, uri.authority()?)))
            .ok_or_else(|| format!("the endpoint {endpoint} has no origin"))?;
        let redirect = format!("{origin}{PATH}/callback");
        let client = PageClient {
            issuer,
            client_id,
            client_secret,
            redirect: &redirect,
            // A rule may forbid a requester to decide their own call: the page must tell them apart.
            tells_people_apart: true,
            scope: scopes,
            // Whether a person decides a call is its rule's to say, from the scopes the session
            // keeps and `[people]`: signing in entitles nobody to anything.
            entitled: |_| false,
        };
        let sign_in = SignIn::new(client, endpoint, sessions, cookies, resource.clone())?;
        Ok(Visitors::new(sign_in, &origin, "the approval's link"))
    }
}

/// A URL that names no approval page.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not the approval page's URL: its origin (https://gate.example), or that and {PATH}")]
pub struct NotThePage(String);

/// Where held call `id` is decided on the page served at `origin`.
pub fn link(origin: &str, id: &HeldId) -> String {
    format!("{}{PATH}/{id}", origin.trim_end_matches('/'))
}

impl ApprovalPage {
    /// The page over `policy`'s calls kept in `held`, decided through `deciding`, its people
    /// signed in as `visitors` says.
    pub fn new(visitors: Visitors, policy: &Arc<Policy>, held: &Arc<HeldCalls>, deciding: &Arc<Deciding>) -> Self {
        Self { visitors, policy: policy.clone(), held: held.clone(), deciding: deciding.clone() }
    }

    /// The origin of the approval page `url` names (`https://gate.example`, or that and
    /// `/approvals`), as another gate of the policy serves it.
    pub fn origin_of(url: &str) -> Result<String, NotThePage> {
        let not = || NotThePage(url.to_owned());
        let parsed = url::Url::parse(url).map_err(|_| not())?;
        let path = parsed.path().trim_end_matches('/');
        let plain = parsed.query().is_none()
            && parsed.fragment().is_none()
            && parsed.username().is_empty()
            && parsed.password().is_none();
        if !matches!(parsed.scheme(), "http" | "https")
            || parsed.host().is_none()
            || !plain
            || !["", PATH].contains(&path)
        {
            return Err(not());
        }
        Ok(parsed.origin().ascii_serialization())
    }

    /// The origin the page is served at.
    pub fn origin(&self) -> &str {
        self.visitors.origin()
    }

    /// Whether the page may sign people in at its issuer, checked at start where it answers.
    pub async fn check_issuer(&self) -> Result<(), approvals::channel::sign_in::SignInError> {
        self.visitors.check_issuer().await
    }

    /// The page's routes.
    pub fn routes(self) -> Router {
        Router::new()
            .route(PATH, get(list))
            .route(&format!("{PATH}/callback"), get(callback))
            .route(&format!("{PATH}/{{approval}}"), get(show).post(decide))
            .with_state(Arc::new(self))
    }

    /// The held call `id`, or the page that says why not.
    async fn kept(&self, id: &HeldId) -> Result<HeldCall, Box<Response>> {
        match self.held.get(id).await {
            Ok(Some(kept)) => Ok(kept),
            Ok(None) => Err(Box::new(no_such_call())),
            Err(error) => {
                tracing::warn!(approval = %id, %error, "the approval page could not read a held call");
                Err(Box::new(unavailable()))
            }
        }
    }

    /// Who the session's person is to the gate: the principal they signed in as, holding their
    /// token's scopes, roles and groups and what `[people]` says of them.
    fn person(&self, session: &Session) -> Person {
        let principal = Principal::new(&session.issuer, &session.subject);
        self.policy.person_of(principal, &session.scopes, &session.membership)
    }
}

/// What `GET /approvals` may be asked: a page of the list, one requester's calls.
#[derive(serde::Deserialize)]
struct ListQuery {
    /// The page, from 1.
    page: Option<usize>,
    /// The requester whose calls alone are listed, as the list names them.
    requested_by: Option<String>,
}

/// `GET /approvals`: the held calls waiting for this person's decision, a page at a time,
/// grouped by requester (the one who waited longest first), each requester's count at the top.
async fn list(State(page): State<Arc<ApprovalPage>>, Query(asked): Query<ListQuery>, headers: HeaderMap) -> Response {
    let session = match page.visitors.signed_in(&headers, PATH).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let person = page.person(&session);
    let waiting = match waiting_for(&page.policy, &page.held, &person, Channel::Page).await {
        Ok(waiting) => waiting,
        Err(error) => {
            tracing::warn!(%error, "the approval page could not read the held calls");
            return unavailable();
        }
    };
    if waiting.is_empty() {
        return Page::notice(StatusCode::OK, "none", "No held call is waiting for your decision.").into_response();
    }
    let requested_by = asked.requested_by.as_deref();
    let listing = Listing::of(waiting, requested_by, asked.page.unwrap_or(1));
    let rows: String = listing
        .calls
        .iter()
        .map(|call| {
            format!(
                "<tr><td><a href=\"{PATH}/{id}\">{id}</a></td><td>{tool} on {upstream}</td><td>{requester}</td>\
                 <td>{deadline}</td></tr>",
                id = escape(call.id.as_str()),
                tool = escape(&call.tool),
                upstream = escape(&call.upstream),
                requester = escape(&call.requester.to_string()),
                deadline = escape(&time(call.deadline)),
            )
        })
        .collect();
    let body = format!(
        "<h1>Calls waiting for your decision</h1>\n{requesters}\n<table><tr><th>Approval</th><th>Call</th>\
         <th>Asked by</th><th>Decide by</th></tr>{rows}</table>\n{pages}",
        requesters = requesters(&listing),
        pages = pages(&listing, requested_by),
    );
    Page::new(StatusCode::OK, "list", body).into_response()
}

/// Where the list's page `page` is, of `requested_by`'s calls alone where named.
fn list_link(page: usize, requested_by: Option<&str>) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query.append_pair("page", &page.to_string());
    if let Some(requested_by) = requested_by {
        query.append_pair("requested_by", requested_by);
    }
    format!("{PATH}?{}", query.finish())
}

/// Each requester with calls waiting, how many, and a link to theirs alone.
fn requesters(listing: &Listing) -> String {
    let each: String = listing
        .requesters
        .iter()
        .map(|(who, count)| {
            format!(
                "<li><a href=\"{link}\">{who}</a>: {count} waiting</li>",
                link = escape(&list_link(1, Some(who))),
                who = escape(who)
            )
        })
        .collect();
    format!("<p>{} waiting, by requester:</p><ul>{each}</ul>", listing.requesters.iter().map(|(_, n)| n).sum::<usize>())
}

/// The list's page number and its neighbours' links.
fn pages(listing: &Listing, requested_by: Option<&str>) -> String {
    let mut links = Vec::new();
    if listing.page > 1 {
        links.push(format!("<a href=\"{}\">Newer page</a>", escape(&list_link(listing.page - 1, requested_by))));
    }
    if listing.page < listing.pages {
        links.push(format!("<a href=\"{}\">Next page</a>", escape(&list_link(listing.page + 1, requested_by))));
    }
    format!("<p>Page {} of {}. {}</p>", listing.page, listing.pages, links.join(" "))
}

/// `GET /approvals/{approval}`: sign in first; then the held call, if this person may decide it.
async fn show(State(page): State<Arc<ApprovalPage>>, Path(approval): Path<String>, headers: HeaderMap) -> Response {
    let Ok(id) = HeldId::parse(&approval) else { return no_such_call() };
    let session = match page.visitors.signed_in(&headers, &format!("{PATH}/{id}")).await {
        Ok(session) => session,
        Err(response) => return response,
    };
    let kept = match page.kept(&id).await {
        Ok(kept) => kept,
        Err(response) => return *response,
    };
    // Looking is not deciding: a refusal is counted only when a decision is tried.
    match may_decide(&page.policy, &kept, &page.person(&session), Channel::Page) {
        Ok(rule) => review(&kept, rule, &session.form_token).into_response(),
        Err(not_here) => refusal(&not_here),
    }
}

/// `POST /approvals/{approval}`: the decision, from this origin, with the session's form token.
async fn decide(
    State(page): State<Arc<ApprovalPage>>,
    Path(approval): Path<String>,
    headers: HeaderMap,
    form: Result<Form<Decision>, FormRejection>,
) -> Response {
    let (session, form) = match page.visitors.decision(&headers, form).await {
        Ok(posted) => posted,
        Err(response) => return response,
    };
    let Ok(id) = HeldId::parse(&approval) else { return no_such_call() };
    let said = match form.decision.as_str() {
        "run" => Outcome::Accepted(RunForm { run: true }),
        "decline" => Outcome::Declined,
        _ => return Page::notice(StatusCode::BAD_REQUEST, "bad_form", "Choose run or decline.").into_response(),
    };
    let kept = match page.kept(&id).await {
        Ok(kept) => kept,
        Err(response) => return *response,
    };
    let person = page.person(&session);
    let rule = match may_decide(&page.policy, &kept, &person, Channel::Page) {
        Ok(rule) => rule,
        Err(not_here) => return refusal(&not_here),
    };
    let answered = Visitors::answered(&session, form.seen);
    let acted = match page.deciding.act(&id, rule, said, &answered, &person).await {
        Ok(acted) => acted,
        Err(words) => return Page::notice(StatusCode::CONFLICT, "refused", &words).into_response(),
    };
    let words = told(&id, &acted);
    match acted {
        Acted::Approved(done) => Page::decided("approved", &words, done.receipt.as_deref(), jwks::PATH),
        Acted::Declined(done) => Page::decided("declined", &words, done.receipt.as_deref(), jwks::PATH),
        Acted::ApprovedBefore(_) => Page::notice(StatusCode::CONFLICT, "refused", &words),
        Acted::Dismissed(_) => Page::notice(StatusCode::OK, "dismissed", &words),
    }
    .into_response()
}

/// `GET /approvals/callback`: the issuer sends the browser back here.
async fn callback(State(page): State<Arc<ApprovalPage>>, Query(back): Query<Callback>, headers: HeaderMap) -> Response {
    page.visitors.callback(back, &headers).await
}

/// The held call, who asked for what and why it waits, with the decider's two buttons.
fn review(kept: &HeldCall, rule: &Rule, form_token: &str) -> Page {
    let arguments = serde_json::to_string_pretty(&kept.arguments).unwrap_or_else(|_| kept.arguments.to_string());
    let why = rule
        .when
        .as_ref()
        .map(|when| format!(", as <code>{}</code> holds", escape(&when.to_string())))
        .unwrap_or_default();
    let body = format!(
        "<h1>{tool} on {upstream}</h1>\n\
         <p>{requester} asks to run <code>{tool}</code> on {upstream} with these arguments:</p>\n\
         <pre data-arguments>{arguments}</pre>\n\
         <p>It is held by the gate's rule \"{rule}\"{why} (approval {id}); undecided by {deadline}, it does not \
         run.</p>\n\
         <form method=\"post\" action=\"{PATH}/{id}\">\n\
         <input type=\"hidden\" name=\"form_token\" value=\"{token}\">\n\
         <input type=\"hidden\" name=\"seen\" value=\"{seen}\">\n\
         <button type=\"submit\" name=\"decision\" value=\"run\">Let it run once</button>\n\
         <button type=\"submit\" name=\"decision\" value=\"decline\">Decline it</button>\n\
         </form>",
        tool = escape(&kept.tool),
        upstream = escape(&kept.upstream),
        requester = escape(&kept.requester.to_string()),
        arguments = escape(&arguments),
        rule = escape(&rule.name),
        id = escape(kept.id.as_str()),
        deadline = escape(&time(kept.deadline)),
        token = escape(form_token),
        seen = escape(&kept.digest.to_string()),
    );
    Page::new(StatusCode::OK, "review", body)
}

/// Why this person may not decide a call here, as a page.
fn refusal(not_here: &NotHere) -> Response {
    let (status, outcome) = match not_here {
        NotHere::Settled { .. } => (StatusCode::OK, "settled"),
        NotHere::NoRule { .. } | NotHere::Elsewhere { .. } | NotHere::Untold { .. } => {
            (StatusCode::CONFLICT, "elsewhere")
        }
        NotHere::NotDecider { .. } | NotHere::Own { .. } => (StatusCode::FORBIDDEN, "not_yours"),
    };
    Page::notice(status, outcome, &not_here.to_string()).into_response()
}

fn no_such_call() -> Response {
    Page::notice(StatusCode::NOT_FOUND, "no_such_call", "There is no such held call.").into_response()
}

fn time(at: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_page_served_elsewhere_is_named_by_its_origin_or_that_and_its_path_and_nothing_else() {
        for (url, origin) in [
            ("https://gate.example", "https://gate.example"),
            ("https://gate.example/approvals/", "https://gate.example"),
            ("http://127.0.0.1:8720/approvals", "http://127.0.0.1:8720"),
        ] {
            assert_eq!(super::ApprovalPage::origin_of(url).unwrap(), origin, "{url}");
        }
        for url in [
            "gate.example",
            "ftp://gate.example",
            "https://gate.example/mcp",
            "https://gate.example/?a=b",
            "https://:secret@gate.example",
            "",
        ] {
            assert!(super::ApprovalPage::origin_of(url).is_err(), "{url}");
        }
    }
}
