//! [`PersonAtTerminal`]: the person at this terminal, as an rmcp client handler that puts each
//! elicitation question to them, by the client rules of MCP 2026-07-28 (client/elicitation):
//!
//! - it says which server asks (its name from discovery and the command that started it) and
//!   during which tool call, then the server's message;
//! - decline and cancel are always offered: first a choice of Answer, Decline or Cancel, and
//!   Esc or Ctrl-C in any prompt cancels the question;
//! - form mode: one prompt per field, with its title, description, rules and default filled
//!   in, each value checked against the schema before it is taken; then a review that lists
//!   every answer and lets the person change any of them before anything is sent;
//! - URL mode: the full URL with its host emphasised, warnings for punycode, non-ASCII hosts and
//!   the like, never fetched, opened in the system browser only if the person says so.
//!
//! Prompts draw on stderr (inquire's way); one question at a time, even when a server asks
//! several in one round. Server text is printed inert: it cannot move the cursor or recolour.

use std::{
    io::IsTerminal,
    sync::{Arc, Mutex},
};

use inquire::{
    Confirm, InquireError, MultiSelect, Select, Text,
    list_option::ListOption,
    validator::{ErrorMessage, Validation},
};
use mrtr::{
    client::Answer,
    form::{Field, FieldKind, FlatForm, Format},
};
use rmcp::{
    ClientHandler, ErrorData, RoleClient,
    model::{ClientConfig, ElicitRequestParams, ElicitResult, ElicitationCapability},
    service::RequestContext,
};
use serde_json::{Map, Value};

use crate::{
    form::FieldPrompt,
    link,
    text::{bold, dim, emphasis, inert, line},
};

/// Who is asking: the server as the person knows it, and the tool being called.
#[derive(Debug, Clone, Default)]
struct Asking {
    server: String,
    tool: Option<String>,
}

struct Shared {
    asking: Mutex<Asking>,
    /// One question on the terminal at a time.
    turn: tokio::sync::Mutex<()>,
}

/// The person at this terminal. Clones share who is asking.
#[derive(Clone)]
pub struct PersonAtTerminal {
    shared: Arc<Shared>,
    declares: Option<ElicitationCapability>,
    name: String,
}

impl PersonAtTerminal {
    /// A person who answers for `server` (how to name the server until discovery says more).
    /// Declares form and URL elicitation when stdin and stderr are a terminal, and none when
    /// there is nobody to ask: a server then refuses a call that needs a question (-32021).
    pub fn new(server: impl Into<String>) -> Self {
        let at_terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        let declares = at_terminal.then(mrtr::client::form_and_url);
        Self {
            shared: Arc::new(Shared {
                asking: Mutex::new(Asking { server: server.into(), tool: None }),
                turn: tokio::sync::Mutex::new(()),
            }),
            declares,
            name: "fernhill-host".to_owned(),
        }
    }

    /// Whether this person declares the Tasks extension: a host that can ask follows a task to
    /// its end, asking the task's questions as it asks a round's.
    pub fn takes_tasks(&self) -> bool {
        self.declares.is_some()
    }

    /// Declare exactly `capability` (`None`: a host that cannot ask).
    pub fn declaring(mut self, capability: Option<ElicitationCapability>) -> Self {
        self.declares = capability;
        self
    }

    /// Whether this person declares any elicitation, that is, can be asked.
    pub fn can_ask(&self) -> bool {
        self.declares.is_some()
    }

    /// Name the server as discovery described it.
    pub fn set_server(&self, server: impl Into<String>) {
        self.shared.asking.lock().unwrap_or_else(|p| p.into_inner()).server = server.into();
    }

    /// The tool being called, shown with each question (`None` between calls).
    pub fn set_tool(&self, tool: Option<&str>) {
        self.shared.asking.lock().unwrap_or_else(|p| p.into_inner()).tool = tool.map(str::to_owned);
    }

    fn asking(&self) -> Asking {
        self.shared.asking.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl ClientHandler for PersonAtTerminal {
    fn get_info(&self) -> ClientConfig {
        let config = mrtr::client::client_config(&self.name, self.declares.clone());
        if self.takes_tasks() { mrtr::client::declaring_tasks(config) } else { config }
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let _turn = self.shared.turn.lock().await;
        let asking = self.asking();
        let answer = tokio::task::spawn_blocking(move || ask(&asking, request)).await.unwrap_or(Answer::Cancel);
        Ok(answer.into_result())
    }
}

/// Put one question to the person; whatever goes wrong at the terminal cancels it.
fn ask(asking: &Asking, request: ElicitRequestParams) -> Answer {
    eprintln!();
    let tool = asking.tool.as_deref().map(|tool| format!(", during the call to {}", line(tool))).unwrap_or_default();
    eprintln!("{}", bold(&format!("── Question from {}{tool}", asking.server)));
    let url = matches!(request, ElicitRequestParams::UrlElicitationParams { .. });
    let outcome = match request {
        ElicitRequestParams::FormElicitationParams { message, requested_schema, .. } => {
            print_message(&message);
            let order = requested_schema.property_order.clone();
            let schema = serde_json::to_value(&requested_schema).unwrap_or_default();
            ask_form(&FlatForm::from_schema(&schema, order.as_deref()))
        }
        ElicitRequestParams::UrlElicitationParams { message, url, .. } => {
            print_message(&message);
            ask_url(&url)
        }
        _ => {
            eprintln!("This host cannot show this kind of question, so it declines it.");
            Ok(Answer::Decline)
        }
    };
    let answer = match outcome {
        Ok(answer) => answer,
        Err(InquireError::OperationCanceled | InquireError::OperationInterrupted) => Answer::Cancel,
        Err(error) => {
            eprintln!("Could not ask at this terminal ({error}).");
            Answer::Cancel
        }
    };
    let said = match &answer {
        Answer::Accept(_) if url => "accept: the server is told you agreed to go to the page",
        Answer::Accept(_) => "accept: your answers are sent",
        Answer::Decline => "decline: the server is told no",
        Answer::Cancel => "cancel: the server is told you dismissed the question",
    };
    eprintln!("{}", bold(&format!("── You chose {said}.")));
    eprintln!();
    answer
}

fn print_message(message: &str) {
    for text in inert(message, true).lines() {
        eprintln!("  {text}");
    }
}

/// The most options a list shows at once: every choice of a question fits.
const PAGE: usize = 20;

/// Pick one of `options` (all on screen, so Decline and Cancel are always in sight); its index.
fn choose(message: &str, options: Vec<String>, help: &str, cursor: usize) -> Result<usize, InquireError> {
    let page = options.len().clamp(1, PAGE);
    Ok(Select::new(message, options)
        .with_help_message(help)
        .with_page_size(page)
        .with_starting_cursor(cursor)
        .raw_prompt()?
        .index)
}

const RESPOND_HELP: &str = "↑↓ to move, Enter to choose · Decline tells the server no · Cancel or Esc dismisses it";

/// Answer (fill in the form), decline or cancel; answers are reviewed before they are sent.
fn ask_form(form: &FlatForm) -> Result<Answer, InquireError> {
    match form.fields.len() {
        0 => eprintln!("  It asks for no details, only whether you accept."),
        1 => eprintln!("  It asks for 1 answer:"),
        n => eprintln!("  It asks for {n} answers:"),
    }
    for field in &form.fields {
        eprintln!("    • {} {}", bold(&line(field.label())), dim(&format!("({})", field.rules())));
        if let Some(description) = &field.description {
            eprintln!("      {}", line(description));
        }
    }
    let respond = ["Answer", "Decline", "Cancel"].map(str::to_owned).to_vec();
    match choose("How do you want to respond?", respond, RESPOND_HELP, 0)? {
        1 => return Ok(Answer::Decline),
        2 => return Ok(Answer::Cancel),
        _ => {}
    }
    let mut answers: Vec<Option<Value>> = Vec::with_capacity(form.fields.len());
    for field in &form.fields {
        answers.push(ask_field(field, field.default.as_ref())?);
    }
    loop {
        let content: Map<String, Value> = form
            .fields
            .iter()
            .zip(&answers)
            .filter_map(|(field, answer)| Some((field.key.clone(), answer.clone()?)))
            .collect();
        let problems = form.problems(&content);
        eprintln!("  {}", bold("Review your answers before they are sent:"));
        for (field, answer) in form.fields.iter().zip(&answers) {
            let shown = answer.as_ref().map(|value| line(&field.show(value))).unwrap_or_else(|| "(no answer)".into());
            eprintln!("    {}: {shown}", line(field.label()));
        }
        for problem in &problems {
            eprintln!("    ⚠ {}: {}", line(&problem.field), problem.rule);
        }
        let mut options = Vec::new();
        if problems.is_empty() {
            options.push("Send these answers".to_owned());
        }
        let changes = options.len();
        options.extend(form.fields.iter().map(|field| format!("Change \"{}\"", line(field.label()))));
        options.push("Decline instead".to_owned());
        options.push("Cancel".to_owned());
        let count = options.len();
        let chosen = choose("Send them?", options, RESPOND_HELP, 0)?;
        if chosen < changes {
            return Ok(Answer::Accept(Some(content)));
        }
        if chosen >= changes + form.fields.len() {
            return Ok(if chosen == count - 1 { Answer::Cancel } else { Answer::Decline });
        }
        let i = chosen - changes;
        let current = answers[i].clone();
        answers[i] = ask_field(&form.fields[i], current.as_ref())?;
    }
}

/// Ask for one field's value, `start` filled in. `None`: left out (an optional field).
pub(crate) fn ask_field(field: &Field, start: Option<&Value>) -> Result<Option<Value>, InquireError> {
    let label = line(field.label());
    let mut help = field.description.as_deref().map(line).map(|d| format!("{d} · ")).unwrap_or_default();
    help.push_str(&field.rules());
    let start = start.filter(|value| field.check(value).is_ok());
    match &field.kind {
        FieldKind::Boolean if field.required || start.is_some() => {
            let mut prompt = Confirm::new(&label).with_help_message(&help);
            match start.and_then(Value::as_bool) {
                Some(value) => prompt = prompt.with_default(value),
                None => prompt = prompt.with_placeholder("y/n"),
            }
            Ok(Some(Value::Bool(prompt.prompt()?)))
        }
        FieldKind::Boolean => {
            let options = ["Yes", "No", "(no answer)"].map(str::to_owned).to_vec();
            match choose(&label, options, &help, 0)? {
                0 => Ok(Some(Value::Bool(true))),
                1 => Ok(Some(Value::Bool(false))),
                _ => Ok(None),
            }
        }
        FieldKind::Choice(choices) => {
            let mut options: Vec<String> = choices.iter().map(|choice| line(&choice.label)).collect();
            if !field.required {
                options.push("(no answer)".to_owned());
            }
            let cursor = start
                .and_then(Value::as_str)
                .and_then(|value| choices.iter().position(|choice| choice.value == value))
                .unwrap_or(0);
            let chosen = choose(&label, options, &help, cursor)?;
            Ok(choices.get(chosen).map(|choice| Value::String(choice.value.clone())))
        }
        FieldKind::Choices { options: choices, .. } => {
            let options: Vec<String> = choices.iter().map(|choice| line(&choice.label)).collect();
            let marked: Vec<usize> = start
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|value| choices.iter().position(|choice| Some(choice.value.as_str()) == value.as_str()))
                .collect();
            let values: Vec<String> = choices.iter().map(|choice| choice.value.clone()).collect();
            let checked = field.clone();
            let validator = move |picked: &[ListOption<&String>]| {
                let picked: Vec<Value> = picked.iter().map(|o| Value::String(values[o.index].clone())).collect();
                if picked.is_empty() && !checked.required {
                    return Ok(Validation::Valid);
                }
                Ok(match checked.check(&Value::Array(picked)) {
                    Ok(()) => Validation::Valid,
                    Err(problem) => Validation::Invalid(ErrorMessage::Custom(problem.rule)),
                })
            };
            let page = options.len().clamp(1, PAGE);
            let picked = MultiSelect::new(&label, options)
                .with_help_message(&help)
                .with_page_size(page)
                .with_default(&marked)
                .with_validator(validator)
                .raw_prompt()?;
            if picked.is_empty() && !field.required {
                return Ok(None);
            }
            Ok(Some(Value::Array(picked.iter().map(|o| Value::String(choices[o.index].value.clone())).collect())))
        }
        FieldKind::Text { .. } | FieldKind::Number { .. } | FieldKind::Other(_) => {
            let initial = start.map(|value| field.as_input(value)).unwrap_or_default();
            let checked = field.clone();
            let validator = move |input: &str| {
                Ok(match checked.parse(input) {
                    Ok(_) => Validation::Valid,
                    Err(problem) => Validation::Invalid(ErrorMessage::Custom(problem)),
                })
            };
            let placeholder = match &field.kind {
                FieldKind::Text { format: Some(Format::Date), .. } => "YYYY-MM-DD",
                FieldKind::Text { format: Some(Format::DateTime), .. } => "YYYY-MM-DDTHH:MM:SSZ",
                FieldKind::Text { format: Some(Format::Email), .. } => "name@example.com",
                FieldKind::Text { format: Some(Format::Uri), .. } => "https://",
                _ if !field.required => "(Enter to leave out)",
                _ => "",
            };
            let input = Text::new(&label)
                .with_help_message(&help)
                .with_initial_value(&initial)
                .with_placeholder(placeholder)
                .with_validator(validator)
                .prompt()?;
            field.parse(&input).map_err(|problem| InquireError::Custom(problem.into()))
        }
    }
}

/// Show the URL and its host, warn, and open it only if the person says so.
fn ask_url(raw: &str) -> Result<Answer, InquireError> {
    let link = link::inspect(raw);
    eprintln!("  It asks you to go to this page in your web browser:");
    let shown = match link::split_at_host(raw) {
        Some((before, host, after)) => format!("{}{}{}", line(before), emphasis(&line(host)), line(after)),
        None => line(raw),
    };
    eprintln!("    {shown}");
    if let Some(host) = &link.host {
        let mut site = format!("  The site: [{}]", emphasis(&line(host)));
        if let Some(ascii) = &link.ascii_host {
            site.push_str(&format!(", which the browser looks up as {}", line(ascii)));
        }
        eprintln!("{site}");
    }
    for warning in &link.warnings {
        eprintln!("  {} {}", bold("⚠ Warning:"), line(warning));
    }
    eprintln!("  This host has not opened or fetched the page, and sees nothing you do there.");
    eprintln!("  Accepting tells the server only that you agree to go there.");
    let valid = !link.warnings.first().is_some_and(|w| w.starts_with("This is not a valid URL"));
    let mut options: Vec<(&str, Option<Answer>)> = Vec::new();
    if link.openable {
        options.push(("Open it in my browser, and accept", None));
    }
    if valid {
        options.push(("Accept, without opening it: I will go there myself", Some(Answer::Accept(None))));
    }
    options.push(("Decline", Some(Answer::Decline)));
    options.push(("Cancel", Some(Answer::Cancel)));
    loop {
        let labels: Vec<String> = options.iter().map(|(label, _)| (*label).to_owned()).collect();
        let chosen = choose("How do you want to respond?", labels, RESPOND_HELP, 0)?;
        match &options[chosen].1 {
            Some(answer) => return Ok(answer.clone()),
            None => match open::that_detached(raw) {
                Ok(()) => {
                    eprintln!("  Opened in your browser.");
                    return Ok(Answer::Accept(None));
                }
                Err(error) => eprintln!("  Could not open a browser ({error}). Choose again."),
            },
        }
    }
}
