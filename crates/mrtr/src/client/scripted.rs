//! A scripted person at the host: answers each question from a script, and remembers them.
//!
//! The examples, the tests and `fernhill demo` play the support lead with this. It declares
//! the elicitation modes it is given (or none, to play a host that cannot ask), answers each
//! question with the next answer of its script (or the same answer every time), and records
//! every question that reached it. Decline and cancel are answers like accept.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex},
};

use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
        FormElicitationCapability, Implementation, UrlElicitationCapability,
    },
    service::RequestContext,
};
use serde_json::{Map, Value};

/// One answer a person can give.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Accept, with the form's content (URL mode: none).
    Accept(Option<Map<String, Value>>),
    Decline,
    Cancel,
}

impl Answer {
    /// Accept a form with `content` (a JSON object).
    pub fn accept(content: Value) -> Self {
        match content {
            Value::Object(map) => Answer::Accept(Some(map)),
            _ => Answer::Accept(None),
        }
    }

    /// The support lead's yes to the refund question.
    pub fn release() -> Self {
        Answer::accept(serde_json::json!({"release": true}))
    }

    pub fn into_result(self) -> ElicitResult {
        match self {
            Answer::Accept(content) => {
                let mut result = ElicitResult::new(ElicitationAction::Accept);
                result.content = content.map(Value::Object);
                result
            }
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        }
    }

    /// The answer as it travels in `inputResponses`.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self.clone().into_result()).unwrap_or(Value::Null)
    }
}

enum Script {
    Always(Answer),
    InTurn(VecDeque<Answer>),
}

type OnQuestion = Arc<dyn Fn(&ElicitRequestParams) + Send + Sync>;

/// A person played by code. Clone it freely: clones share the script and the record.
#[derive(Clone)]
pub struct ScriptedUser {
    declares: Option<ElicitationCapability>,
    script: Arc<Mutex<Script>>,
    asked: Arc<Mutex<Vec<ElicitRequestParams>>>,
    on_question: Option<OnQuestion>,
    name: String,
}

impl ScriptedUser {
    /// Declares form and URL elicitation and gives `answer` to every question.
    pub fn always(answer: Answer) -> Self {
        Self::with_script(Script::Always(answer))
    }

    /// Declares form and URL elicitation and gives `answers` in turn; cancels once they run out.
    pub fn in_turn(answers: impl IntoIterator<Item = Answer>) -> Self {
        Self::with_script(Script::InTurn(answers.into_iter().collect()))
    }

    /// A host with no way to ask anyone: declares no elicitation at all.
    pub fn unable_to_ask() -> Self {
        let mut user = Self::always(Answer::Cancel);
        user.declares = None;
        user
    }

    fn with_script(script: Script) -> Self {
        Self {
            declares: Some(
                ElicitationCapability::new()
                    .with_form(FormElicitationCapability::new())
                    .with_url(UrlElicitationCapability::new()),
            ),
            script: Arc::new(Mutex::new(script)),
            asked: Arc::default(),
            on_question: None,
            name: "fernhill".into(),
        }
    }

    /// Declare exactly `capability` (for example form only).
    pub fn declaring(mut self, capability: Option<ElicitationCapability>) -> Self {
        self.declares = capability;
        self
    }

    /// Call `f` with each question as it arrives (to print it, say).
    pub fn on_question(mut self, f: impl Fn(&ElicitRequestParams) + Send + Sync + 'static) -> Self {
        self.on_question = Some(Arc::new(f));
        self
    }

    /// The client name sent in `clientInfo`.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Every question that reached this person, in order.
    pub fn asked(&self) -> Vec<ElicitRequestParams> {
        self.asked.lock().map(|asked| asked.clone()).unwrap_or_default()
    }

    fn next_answer(&self) -> Answer {
        let mut script = self.script.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *script {
            Script::Always(answer) => answer.clone(),
            Script::InTurn(answers) => answers.pop_front().unwrap_or(Answer::Cancel),
        }
    }
}

/// The message of a question, whatever its mode.
pub fn message_of(params: &ElicitRequestParams) -> &str {
    match params {
        ElicitRequestParams::FormElicitationParams { message, .. } => message,
        ElicitRequestParams::UrlElicitationParams { message, .. } => message,
        _ => "",
    }
}

impl ClientHandler for ScriptedUser {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = self.declares.clone();
        ClientConfig::new(capabilities, Implementation::new(self.name.clone(), env!("CARGO_PKG_VERSION")))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let Some(f) = &self.on_question {
            f(&request);
        }
        if let Ok(mut asked) = self.asked.lock() {
            asked.push(request);
        }
        Ok(self.next_answer().into_result())
    }
}
