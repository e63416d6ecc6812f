//! The provider's memory: accounts, flows and payments.
//!
//! Everything lives in a `HashMap` behind one `Mutex` and is gone when the
//! process ends; that is enough for a stand-in. Each operation takes the lock
//! once, so a flow's check-then-change steps cannot interleave with another
//! request's. Operations log what they decide (never passwords or tokens).

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use crate::accounts::{Accounts, equal_in_constant_time};
use crate::ids::{Amount, FlowId, IdError, RefundId, Username, random_hex};
use crate::model::{Flow, FlowStatus, NewFlow, Payment, PaymentRequest};
use crate::timestamp::rfc3339;

/// Why an operation on the state failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// A field did not have its format.
    #[error(transparent)]
    Invalid(#[from] IdError),
    #[error("There is no flow {0}.")]
    NoSuchFlow(FlowId),
    /// The flow ID is taken by a flow with another lead, refund or amount.
    #[error("Flow {0} is already registered with a different lead, refund or amount.")]
    FlowConflict(FlowId),
    #[error("Flow {0} is not finished: the support lead has not connected their account yet.")]
    NotFinished(FlowId),
    /// The flow pays another refund than the one asked for.
    #[error("Flow {flow_id} is for refund {flow_refund_id}, not {refund_id}.")]
    WrongRefund { flow_id: FlowId, flow_refund_id: RefundId, refund_id: RefundId },
    /// The amount is above what one payment may be.
    #[error("{amount} is above the {limit} one payment may be.")]
    OverLimit { amount: Amount, limit: Amount },
    /// The sign-in form did not carry the flow's CSRF token.
    #[error("The sign-in form for flow {0} is missing its security token or has a wrong one.")]
    BadCsrf(FlowId),
}

/// What a sign-in on a connect page came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignIn {
    /// The flow's lead signed in; the flow is finished (now or before).
    Connected,
    /// Unknown username or wrong password. The flow is unchanged.
    WrongPassword,
    /// A real account, but not the person who started the payment. The flow
    /// is unchanged.
    WrongPerson,
}

/// What a connect page shows about a flow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectView {
    pub refund_id: RefundId,
    pub amount: Amount,
    pub status: FlowStatus,
    /// The flow's CSRF token, for the form's hidden field.
    pub csrf_token: String,
}

/// Accounts, flows and payments; share it as `Arc<ProviderState>`.
#[derive(Debug)]
pub struct ProviderState {
    accounts: Accounts,
    /// The most one payment may be, in cents.
    limit: Amount,
    book: Mutex<Book>,
}

/// The most one payment may be unless told otherwise: far above any refund of the shop's
/// (its orders are kitchen and garden goods), far below what a made-up flow could ask for.
pub const DEFAULT_LIMIT: &str = "10000.00";

#[derive(Debug, Default)]
struct Book {
    flows: HashMap<FlowId, FlowEntry>,
    /// At most one payment per refund.
    payments: HashMap<RefundId, Payment>,
    payments_made: u64,
}

#[derive(Debug)]
struct FlowEntry {
    lead: Option<Username>,
    refund_id: RefundId,
    amount: Amount,
    csrf_token: String,
    finished: Option<Finished>,
}

#[derive(Debug)]
struct Finished {
    by: Username,
    at: SystemTime,
}

impl FlowEntry {
    fn record(&self, flow_id: &FlowId) -> Flow {
        Flow {
            flow_id: flow_id.to_string(),
            lead: self.lead.as_ref().map(Username::to_string),
            refund_id: self.refund_id.to_string(),
            amount: self.amount.to_string(),
            status: self.status(),
            finished_by: self.finished.as_ref().map(|finished| finished.by.to_string()),
            finished_at: self.finished.as_ref().map(|finished| rfc3339(finished.at)),
        }
    }

    fn status(&self) -> FlowStatus {
        if self.finished.is_some() { FlowStatus::Finished } else { FlowStatus::Pending }
    }
}

impl Default for ProviderState {
    /// No flows, the demo [`Accounts`].
    fn default() -> ProviderState {
        ProviderState::new(Accounts::default())
    }
}

impl ProviderState {
    /// No flows or payments yet; people sign in with `accounts`.
    pub fn new(accounts: Accounts) -> ProviderState {
        let limit = Amount::parse(DEFAULT_LIMIT).expect("the default limit is an amount");
        ProviderState { accounts, limit, book: Mutex::new(Book::default()) }
    }

    /// Pay at most `limit` in one payment.
    pub fn with_limit(mut self, limit: Amount) -> ProviderState {
        self.limit = limit;
        self
    }

    /// The accounts people sign in with.
    pub fn accounts(&self) -> &Accounts {
        &self.accounts
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        // Every change is a single insert or assignment, so a panic while
        // holding the lock cannot leave a half-made change behind.
        self.book.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a pending flow. Returns it and whether this call created it
    /// (`false`: the same flow was already registered).
    pub fn register(&self, new: &NewFlow) -> Result<(Flow, bool), StateError> {
        let flow_id = FlowId::parse(&new.flow_id)?;
        let lead = new.lead.as_deref().map(Username::parse).transpose()?;
        let refund_id = RefundId::parse(&new.refund_id)?;
        let amount = Amount::parse(&new.amount)?;
        if cents(&amount) > cents(&self.limit) {
            tracing::warn!(%flow_id, %amount, limit = %self.limit, "flow refused: above the payment limit");
            return Err(StateError::OverLimit { amount, limit: self.limit.clone() });
        }
        let mut book = self.book();
        match book.flows.entry(flow_id) {
            Entry::Occupied(existing) => {
                let entry = existing.get();
                if entry.lead == lead && entry.refund_id == refund_id && entry.amount == amount {
                    Ok((entry.record(existing.key()), false))
                } else {
                    tracing::warn!(flow_id = %existing.key(), "flow ID reused with different details");
                    Err(StateError::FlowConflict(existing.key().clone()))
                }
            }
            Entry::Vacant(vacant) => {
                tracing::info!(flow_id = %vacant.key(), lead = ?lead.as_ref().map(Username::to_string), %refund_id, %amount, "flow registered");
                let entry = FlowEntry { lead, refund_id, amount, csrf_token: random_hex::<32>(), finished: None };
                let flow = entry.record(vacant.key());
                vacant.insert(entry);
                Ok((flow, true))
            }
        }
    }

    /// The flow as the API shows it.
    pub fn flow(&self, flow_id: &FlowId) -> Result<Flow, StateError> {
        let book = self.book();
        let entry = book.flows.get(flow_id).ok_or_else(|| StateError::NoSuchFlow(flow_id.clone()))?;
        Ok(entry.record(flow_id))
    }

    /// What the connect page for `flow_id` shows.
    pub fn connect_view(&self, flow_id: &FlowId) -> Result<ConnectView, StateError> {
        let book = self.book();
        let entry = book.flows.get(flow_id).ok_or_else(|| StateError::NoSuchFlow(flow_id.clone()))?;
        Ok(ConnectView {
            refund_id: entry.refund_id.clone(),
            amount: entry.amount.clone(),
            status: entry.status(),
            csrf_token: entry.csrf_token.clone(),
        })
    }

    /// A sign-in on the connect page of `flow_id`: checks the CSRF token,
    /// then the password, then that the account is the flow's lead, and
    /// finishes the flow if all hold. Signing in again as the lead after
    /// that changes nothing and is still [`SignIn::Connected`].
    pub fn sign_in(&self, flow_id: &FlowId, csrf: &str, username: &str, password: &str) -> Result<SignIn, StateError> {
        let mut book = self.book();
        let entry = book.flows.get_mut(flow_id).ok_or_else(|| StateError::NoSuchFlow(flow_id.clone()))?;
        if !equal_in_constant_time(entry.csrf_token.as_bytes(), csrf.as_bytes()) {
            tracing::warn!(%flow_id, "sign-in refused: missing or wrong CSRF token");
            return Err(StateError::BadCsrf(flow_id.clone()));
        }
        if !self.accounts.check(username, password) {
            tracing::info!(%flow_id, "sign-in refused: wrong username or password");
            return Ok(SignIn::WrongPassword);
        }
        // A checked account's name is a valid username.
        let person = Username::parse(username)?;
        if let Some(lead) = entry.lead.as_ref().filter(|lead| **lead != person) {
            tracing::warn!(%flow_id, signed_in = %person, %lead, "sign-in refused: not the person who started the payment");
            return Ok(SignIn::WrongPerson);
        }
        if entry.finished.is_none() {
            tracing::info!(%flow_id, by = %person, refund_id = %entry.refund_id, "flow finished");
            entry.finished = Some(Finished { by: person, at: clock::Clock::system().now() });
        }
        Ok(SignIn::Connected)
    }

    /// Pays the refund of a finished flow. Returns the payment and whether
    /// this call made it (`false`: the refund was already paid).
    pub fn pay(&self, request: &PaymentRequest) -> Result<(Payment, bool), StateError> {
        let flow_id = FlowId::parse(&request.flow_id)?;
        let refund_id = RefundId::parse(&request.refund_id)?;
        let mut book = self.book();
        let entry = book.flows.get(&flow_id).ok_or_else(|| StateError::NoSuchFlow(flow_id.clone()))?;
        if entry.refund_id != refund_id {
            return Err(StateError::WrongRefund { flow_refund_id: entry.refund_id.clone(), flow_id, refund_id });
        }
        let Some(finished) = &entry.finished else {
            return Err(StateError::NotFinished(flow_id));
        };
        if let Some(payment) = book.payments.get(&refund_id) {
            return Ok((payment.clone(), false));
        }
        let payment = Payment {
            payment_id: format!("P-{:04}", book.payments_made + 1),
            refund_id: refund_id.to_string(),
            amount: entry.amount.to_string(),
            paid_by: finished.by.to_string(),
        };
        tracing::info!(payment_id = %payment.payment_id, %refund_id, amount = %payment.amount, paid_by = %payment.paid_by, %flow_id, "refund paid");
        book.payments_made += 1;
        book.payments.insert(refund_id, payment.clone());
        Ok((payment, true))
    }
}

/// An amount in cents (a valid amount has at most nine digits of units).
fn cents(amount: &Amount) -> u64 {
    let (units, cents) = amount.as_str().split_once('.').unwrap_or((amount.as_str(), "0"));
    units.parse::<u64>().unwrap_or(u64::MAX / 100) * 100 + cents.parse::<u64>().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_flow(flow_id: &str, lead: &str) -> NewFlow {
        NewFlow {
            flow_id: flow_id.into(),
            lead: Some(lead.into()),
            refund_id: "R-0111".into(),
            amount: "180.00".into(),
        }
    }

    const FLOW: &str = "flow-0123456789ab";

    #[test]
    fn flow_lifecycle() {
        let state = ProviderState::default();
        let flow_id = FlowId::parse(FLOW).unwrap();
        let (flow, created) = state.register(&new_flow(FLOW, "lead-1")).unwrap();
        assert!(created);
        assert_eq!(flow.status, FlowStatus::Pending);
        assert_eq!(state.register(&new_flow(FLOW, "lead-1")).unwrap(), (flow, false));
        assert_eq!(state.register(&new_flow(FLOW, "lead-2")), Err(StateError::FlowConflict(flow_id.clone())));

        let pay = PaymentRequest { flow_id: FLOW.into(), refund_id: "R-0111".into() };
        assert_eq!(state.pay(&pay), Err(StateError::NotFinished(flow_id.clone())));

        let csrf = state.connect_view(&flow_id).unwrap().csrf_token;
        assert_eq!(csrf.len(), 64);
        assert_eq!(state.sign_in(&flow_id, "", "lead-1", "fernhill-lead-1"), Err(StateError::BadCsrf(flow_id.clone())));
        assert_eq!(state.sign_in(&flow_id, &csrf, "lead-1", "nope"), Ok(SignIn::WrongPassword));
        assert_eq!(state.sign_in(&flow_id, &csrf, "lead-2", "fernhill-lead-2"), Ok(SignIn::WrongPerson));
        assert_eq!(state.flow(&flow_id).unwrap().status, FlowStatus::Pending);
        assert_eq!(state.sign_in(&flow_id, &csrf, "lead-1", "fernhill-lead-1"), Ok(SignIn::Connected));
        let finished = state.flow(&flow_id).unwrap();
        assert_eq!(finished.finished_by.as_deref(), Some("lead-1"));
        assert!(finished.finished_at.is_some());
        assert_eq!(state.sign_in(&flow_id, &csrf, "lead-1", "fernhill-lead-1"), Ok(SignIn::Connected));
        assert_eq!(state.flow(&flow_id).unwrap(), finished);

        let (payment, created) = state.pay(&pay).unwrap();
        assert!(created);
        assert_eq!(payment.payment_id, "P-0001");
        assert_eq!(payment.paid_by, "lead-1");
        assert_eq!(state.pay(&pay).unwrap(), (payment, false));
        let other_refund = PaymentRequest { flow_id: FLOW.into(), refund_id: "R-0112".into() };
        assert!(matches!(state.pay(&other_refund), Err(StateError::WrongRefund { .. })));
    }

    /// A flow for more than one payment may be is refused, whoever registers it.
    #[test]
    fn a_flow_above_the_limit_is_refused() {
        let state = ProviderState::default();
        let over = NewFlow { amount: "99999.00".into(), ..new_flow(FLOW, "lead-1") };
        assert!(matches!(state.register(&over), Err(StateError::OverLimit { .. })));
        let at = NewFlow { amount: DEFAULT_LIMIT.into(), ..new_flow(FLOW, "lead-1") };
        assert!(state.register(&at).is_ok());
        let small = ProviderState::default().with_limit(Amount::parse("100.00").unwrap());
        assert!(
            matches!(small.register(&new_flow(FLOW, "lead-1")), Err(StateError::OverLimit { .. })),
            "180.00 > 100.00"
        );
    }

    #[test]
    fn validates_fields() {
        let state = ProviderState::default();
        for bad in [
            new_flow("short", "lead-1"),
            new_flow(FLOW, "lead 1"),
            NewFlow { refund_id: "R-1".into(), ..new_flow(FLOW, "lead-1") },
            NewFlow { amount: "180".into(), ..new_flow(FLOW, "lead-1") },
        ] {
            assert!(matches!(state.register(&bad), Err(StateError::Invalid(_))), "{bad:?} accepted");
        }
    }
}
