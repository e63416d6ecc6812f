//! The HTML pages a support lead sees in their browser, titled "Fernhill Pay".
//!
//! Pages are plain strings; every value put into one goes through
//! [`escape`]. Each page's `<main>` carries a `data-outcome` attribute (such
//! as `connected`) for tests and scripts to tell pages apart. Responses carry
//! a strict Content-Security-Policy (no scripts, forms post only to this
//! origin), `X-Frame-Options: DENY` against clickjacking, and are not cached.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::ids::FlowId;
use crate::state::ConnectView;

/// The Content-Security-Policy of every page.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'";

/// Sentence on the connected page.
pub const CONNECTED: &str = "Connected. You can go back to your host and retry.";
/// Sentence on the page for a flow that was finished before.
pub const ALREADY_CONNECTED: &str = "This payment is already connected. You can go back to your host and retry.";
/// Sentence for an unknown username or a wrong password.
pub const WRONG_PASSWORD: &str = "The username or password is wrong.";
/// Sentence for a real account that did not start the payment.
pub const WRONG_PERSON: &str = "This payment was started by another person; sign in as the person who started it.";

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:28rem;margin:3rem auto;padding:0 1rem;color:#222}\
h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem}input{width:100%;padding:.4rem;box-sizing:border-box}\
button{margin-top:1rem;padding:.5rem 1rem}.notice{padding:.6rem;background:#fdecea;border:1px solid #f5c2c0}\
.ok{padding:.6rem;background:#e8f5e9;border:1px solid #b7dfb9}";

/// An HTML page with its status; becomes a response with the page headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub status: StatusCode,
    /// Short machine name of the page, such as `sign_in` or `wrong_person`.
    pub outcome: &'static str,
    /// The whole document.
    pub html: String,
}

pub use web_service::html::escape;

impl Page {
    /// A page whose `<main>` holds `body`, which must already be HTML.
    fn new(status: StatusCode, outcome: &'static str, body: &str) -> Page {
        let html = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <meta name=\"referrer\" content=\"no-referrer\">\n<title>Fernhill Pay</title>\n\
             <style>{STYLE}</style>\n</head>\n<body>\n<main data-outcome=\"{outcome}\">\n\
             <h1>Fernhill Pay</h1>\n{body}</main>\n</body>\n</html>\n"
        );
        Page { status, outcome, html }
    }

    /// 200: the sign-in page of a pending flow.
    pub fn sign_in(flow_id: &FlowId, view: &ConnectView) -> Page {
        Page::new(StatusCode::OK, "sign_in", &sign_in_body(flow_id, view, None))
    }

    /// 401: the form again, after an unknown username or wrong password.
    pub fn wrong_password(flow_id: &FlowId, view: &ConnectView) -> Page {
        Page::new(StatusCode::UNAUTHORIZED, "wrong_password", &sign_in_body(flow_id, view, Some(WRONG_PASSWORD)))
    }

    /// 403: the form again, after someone other than the lead signed in.
    pub fn wrong_person(flow_id: &FlowId, view: &ConnectView) -> Page {
        Page::new(StatusCode::FORBIDDEN, "wrong_person", &sign_in_body(flow_id, view, Some(WRONG_PERSON)))
    }

    /// 200: the lead signed in and the flow is finished.
    pub fn connected(view: &ConnectView) -> Page {
        Page::new(StatusCode::OK, "connected", &finished_body(CONNECTED, view))
    }

    /// 200: the page of a flow that was finished before.
    pub fn already_connected(view: &ConnectView) -> Page {
        Page::new(StatusCode::OK, "already_connected", &finished_body(ALREADY_CONNECTED, view))
    }

    /// 404: no flow with this ID (or not a flow ID at all).
    pub fn not_found() -> Page {
        let body = "<p class=\"notice\">There is no payment to connect at this address. \
                    The link may be mistyped or out of date; ask your host for a new one.</p>\n";
        Page::new(StatusCode::NOT_FOUND, "not_found", body)
    }

    /// 403: the form came without this flow's CSRF token.
    pub fn bad_csrf() -> Page {
        let body = "<p class=\"notice\">This sign-in form did not come from this page, or it is out of date. \
                    Open the link from your host again and sign in there.</p>\n";
        Page::new(StatusCode::FORBIDDEN, "bad_csrf", body)
    }

    /// 400: the request was not a readable sign-in form.
    pub fn bad_form(reason: &str) -> Page {
        let body = format!("<p class=\"notice\">The sign-in form could not be read: {}</p>\n", escape(reason));
        Page::new(StatusCode::BAD_REQUEST, "bad_form", &body)
    }
}

fn payment_sentence(view: &ConnectView) -> String {
    format!(
        "refund <strong>{}</strong> of <strong>{}</strong>",
        escape(view.refund_id.as_str()),
        escape(view.amount.as_str())
    )
}

fn sign_in_body(flow_id: &FlowId, view: &ConnectView, notice: Option<&str>) -> String {
    let notice = notice.map(|text| format!("<p class=\"notice\" role=\"alert\">{}</p>\n", escape(text)));
    format!(
        "<p>Your host asks you to connect your Fernhill Pay account to pay {payment}.</p>\n\
         <p>Sign in as the person who started the payment. Your password stays on this page; \
         your host never sees it.</p>\n{notice}\
         <form method=\"post\" action=\"{action}\">\n\
         <input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\n\
         <label for=\"username\">Username</label>\n\
         <input id=\"username\" name=\"username\" autocomplete=\"username\" required>\n\
         <label for=\"password\">Password</label>\n\
         <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required>\n\
         <button type=\"submit\">Sign in and connect</button>\n</form>\n",
        payment = payment_sentence(view),
        notice = notice.unwrap_or_default(),
        // Relative to /connect/{flow_id}, so it also works under a path prefix.
        action = escape(flow_id.as_str()),
        csrf = escape(&view.csrf_token),
    )
}

fn finished_body(sentence: &str, view: &ConnectView) -> String {
    format!(
        "<p class=\"ok\" role=\"status\">{}</p>\n<p>Your account is connected to pay {}.</p>\n",
        escape(sentence),
        payment_sentence(view)
    )
}

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.html).into_response();
        let headers = response.headers_mut();
        for (name, value) in [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "no-referrer"),
            (header::CACHE_CONTROL, "no-store"),
        ] {
            headers.insert(name, HeaderValue::from_static(value));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{Amount, RefundId};
    use crate::model::FlowStatus;

    fn view() -> ConnectView {
        ConnectView {
            refund_id: RefundId::parse("R-0111").unwrap(),
            amount: Amount::parse("180.00").unwrap(),
            status: FlowStatus::Pending,
            csrf_token: "tok\"en<".into(),
        }
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(escape(r#"<a href="x">&'</a>"#), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
        assert_eq!(escape("plain 180.00"), "plain 180.00");
    }

    #[test]
    fn sign_in_page_shows_the_payment_and_a_form() {
        let flow_id = FlowId::parse("flow-0123456789ab").unwrap();
        let page = Page::sign_in(&flow_id, &view());
        assert_eq!(page.status, StatusCode::OK);
        assert!(page.html.contains("<title>Fernhill Pay</title>"));
        assert!(page.html.contains("refund <strong>R-0111</strong> of <strong>180.00</strong>"));
        assert!(page.html.contains("action=\"flow-0123456789ab\""));
        assert!(page.html.contains("name=\"csrf\" value=\"tok&quot;en&lt;\""));
        assert!(!page.html.contains("tok\"en<"));
        let page = Page::wrong_person(&flow_id, &view());
        assert_eq!(page.status, StatusCode::FORBIDDEN);
        assert!(page.html.contains("started by another person; sign in as the person who started it."));
    }
}
