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
    model::{ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability},
    service::RequestContext,
};
use serde_json::{Map, Value};

/// One answer a person can give.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// Accept, with the form's content (URL mode: none).
    Accept(Option<Map<String, Value>>),
    /// Decline: an explicit no.
    Decline,
    /// Cancel: the person dismissed the question without answering it.
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

    /// Accept a form with a typed answer (the server's form type, serialized).
    pub fn form<T: serde::Serialize>(content: &T) -> Self {
        Answer::accept(serde_json::to_value(content).unwrap_or(Value::Null))
    }

    /// The answer as the result of `elicitation/create`, as a client sends it.
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

/// Why a scripted answer could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("answer {given:?} on line {line}: {problem}")]
pub struct ScriptError {
    /// The line of the script the answer is on, counted from 1.
    pub line: usize,
    /// The answer as written, without surrounding whitespace.
    pub given: String,
    /// Why it is not an answer.
    pub problem: String,
}

/// A word that stands for an answer in a script, such as a shop's `release` for its form's yes.
pub type ScriptWord<'a> = (&'a str, Answer);

impl Answer {
    /// `accept` (URL mode: consent), `accept {"field": value, ...}`, `decline`, `cancel`, or one
    /// of the caller's `words`.
    pub fn parse(text: &str, words: &[ScriptWord<'_>]) -> Result<Self, String> {
        let text = text.trim();
        if let Some((_, answer)) = words.iter().find(|(word, _)| *word == text) {
            return Ok(answer.clone());
        }
        let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        match (word, rest.trim()) {
            ("accept", "") => Ok(Answer::Accept(None)),
            ("accept", content) => match serde_json::from_str::<Value>(content) {
                Ok(Value::Object(map)) => Ok(Answer::Accept(Some(map))),
                Ok(_) => Err("the content after accept must be a JSON object".into()),
                Err(error) => Err(format!("the content after accept is not JSON: {error}")),
            },
            ("decline", "") => Ok(Answer::Decline),
            ("cancel", "") => Ok(Answer::Cancel),
            _ => {
                let named: String = words.iter().map(|(word, _)| format!("{word}, ")).collect();
                Err(format!("expected accept [JSON object], {named}decline or cancel"))
            }
        }
    }
}

/// Answers from a small script: one per line (or separated by `;`), `#` starts a comment;
/// `words` names answers the caller's people give often.
pub fn parse_script(text: &str, words: &[ScriptWord<'_>]) -> Result<Vec<Answer>, ScriptError> {
    let mut answers = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        for part in line.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let answer = Answer::parse(part, words).map_err(|problem| ScriptError {
                line: index + 1,
                given: part.to_owned(),
                problem,
            })?;
            answers.push(answer);
        }
    }
    Ok(answers)
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
    tasks: bool,
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
            declares: Some(super::form_and_url()),
            script: Arc::new(Mutex::new(script)),
            asked: Arc::default(),
            on_question: None,
            name: "fernhill".into(),
            tasks: false,
        }
    }

    /// Declare exactly `capability` (for example form only).
    pub fn declaring(mut self, capability: Option<ElicitationCapability>) -> Self {
        self.declares = capability;
        self
    }

    /// Declare the Tasks extension too, on every request: a server may answer a call with a
    /// task, whose questions come through `tasks/get` and go back through `tasks/update`.
    pub fn declaring_tasks(mut self) -> Self {
        self.tasks = true;
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

    /// Put `question` to this person by hand (as a host driving rounds itself does): recorded,
    /// shown to `on_question`, and answered from the script.
    pub fn answer(&self, question: &ElicitRequestParams) -> Answer {
        if let Some(f) = &self.on_question {
            f(question);
        }
        if let Ok(mut asked) = self.asked.lock() {
            asked.push(question.clone());
        }
        self.next_answer()
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
        let config = super::client_config(&self.name, self.declares.clone());
        if self.tasks { super::declaring_tasks(config) } else { config }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        Ok(self.answer(&request).into_result())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_a_script() {
        let yes = Answer::accept(json!({"ok": true}));
        let words = [("yes", yes.clone())];
        let script = "yes   # the first question\ndecline; cancel\n\naccept {\"reason\": \"missing part\", \"restock\": true}\naccept";
        let answers = parse_script(script, &words).unwrap();
        assert_eq!(answers.len(), 5);
        assert_eq!(answers[0], yes);
        assert_eq!((&answers[1], &answers[2]), (&Answer::Decline, &Answer::Cancel));
        assert_eq!(answers[3], Answer::accept(json!({"reason": "missing part", "restock": true})));
        assert_eq!(answers[4], Answer::Accept(None));
        let error = parse_script("yes\nmaybe", &words).unwrap_err();
        assert_eq!((error.line, error.given.as_str()), (2, "maybe"));
        assert_eq!(error.problem, "expected accept [JSON object], yes, decline or cancel");
        assert!(parse_script("accept [1]", &words).is_err() && parse_script("accept {", &words).is_err());
        assert!(parse_script("yes", &[]).is_err(), "a word means something only when the caller names it");
    }

    proptest::proptest! {
        /// Any line of a lead's script reads as an answer or as a reason it does not.
        #[test]
        fn any_script_line_reads_or_says_why(line in ".*") {
            if let Err(problem) = Answer::parse(&line, &[("release", Answer::accept(json!({"release": true})))]) {
                proptest::prop_assert!(!problem.is_empty());
            }
        }
    }
}
