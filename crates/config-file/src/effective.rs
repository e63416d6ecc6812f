//! Each value the chosen command runs with, and where it came from: what `config check`
//! prints. Secrets (the arguments clap hides the environment's values of) are never shown.

use std::{collections::BTreeMap, fmt::Write as _, path::PathBuf};

use clap::{ArgMatches, Command, parser::ValueSource};

use crate::schema::{Schema, split_key};

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    CommandLine,
    /// This environment variable.
    Environment(String),
    /// This line of the configuration file.
    File {
        path: PathBuf,
        line: usize,
    },
    /// The default, written in the type that holds the setting.
    Default,
    /// Not given, and no default: off.
    Unset,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::CommandLine => f.write_str("command line"),
            Source::Environment(name) => write!(f, "environment {name}"),
            Source::File { path, line } => write!(f, "{}:{line}", path.display()),
            Source::Default => f.write_str("default"),
            Source::Unset => f.write_str("not set"),
        }
    }
}

/// One setting as the command runs with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// The arg's ID in clap.
    pub id: String,
    /// The file's key (`section.key`), if the file can give it.
    pub key: Option<&'static str>,
    /// Its flag, `--name`.
    pub flag: Option<String>,
    /// The values, as given (`None` for a secret, which is not shown).
    pub values: Option<Vec<String>>,
    /// Whether the value is a secret.
    pub secret: bool,
    pub source: Source,
}

/// The chosen command's settings with their sources, the file read (if any), and warnings
/// the layers raised (a renamed environment variable in use) for the program to log.
#[derive(Debug, Clone)]
pub struct Effective {
    /// The command, such as `fernhill-mcp serve`.
    pub command: String,
    pub file: Option<PathBuf>,
    pub settings: Vec<Setting>,
    pub warnings: Vec<String>,
}

impl Effective {
    pub(crate) fn of(
        root: &Command,
        matches: &ArgMatches,
        path: &[String],
        schema: &Schema,
        filled: BTreeMap<String, Source>,
        file: Option<PathBuf>,
        warnings: Vec<String>,
    ) -> Effective {
        let command = path.iter().skip(1).try_fold(root, |command, name| command.find_subcommand(name));
        let sub = matches_at(matches, path);
        let keys = schema.command(path);
        let mut settings = Vec::new();
        if let (Some(command), Some(sub)) = (command, sub) {
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") || arg.is_global_set() {
                    continue;
                }
                let secret = arg.is_hide_env_values_set();
                let values: Vec<String> = sub
                    .get_raw(id)
                    .map(|raw| raw.map(|value| value.to_string_lossy().into_owned()).collect())
                    .unwrap_or_default();
                let source = match filled.get(id) {
                    Some(source) => source.clone(),
                    None => match sub.value_source(id) {
                        Some(ValueSource::CommandLine) => Source::CommandLine,
                        Some(ValueSource::EnvVariable) => Source::Environment(
                            arg.get_env().map(|env| env.to_string_lossy().into_owned()).unwrap_or_default(),
                        ),
                        Some(ValueSource::DefaultValue) => Source::Default,
                        _ => Source::Unset,
                    },
                };
                settings.push(Setting {
                    id: id.to_owned(),
                    key: keys.and_then(|keys| keys.key_of(id)),
                    flag: arg.get_long().map(|long| format!("--{long}")),
                    values: (!secret || values.is_empty()).then_some(values),
                    secret,
                    source,
                });
            }
        }
        Effective { command: path.join(" "), file, settings, warnings }
    }

    /// The setting of the arg `id`.
    pub fn setting(&self, id: &str) -> Option<&Setting> {
        self.settings.iter().find(|setting| setting.id == id)
    }

    /// Where the arg `id`'s value came from, in words an error can quote: `fernhill.toml:12
    /// (approvals.confirm_on)`, `--confirm-on`, `environment SHOP_CONFIRM_ON`.
    pub fn where_set(&self, id: &str) -> String {
        let Some(setting) = self.setting(id) else { return id.to_owned() };
        let name = setting.key.map(str::to_owned).or_else(|| setting.flag.clone()).unwrap_or_else(|| id.to_owned());
        match &setting.source {
            Source::CommandLine => setting.flag.clone().unwrap_or(name),
            Source::File { .. } => format!("{} ({name})", setting.source),
            other => format!("{name} ({other})"),
        }
    }

    /// The effective configuration as TOML with each value's source beside it, secrets
    /// redacted; settings the file cannot give come last, by flag.
    pub fn render(&self, schema: &Schema) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# {}: the effective configuration", self.command);
        let _ = match &self.file {
            Some(path) => writeln!(out, "# file: {}", path.display()),
            None => writeln!(out, "# file: none (give --config PATH or {})", schema.env),
        };
        for section in schema.sections {
            let in_section: Vec<&Setting> = self
                .settings
                .iter()
                .filter(|setting| setting.key.is_some_and(|key| split_key(key).0 == section.name))
                .collect();
            if in_section.is_empty() {
                continue;
            }
            let _ = writeln!(out, "\n[{}]", section.name);
            for setting in in_section {
                let key = setting.key.map_or("", |key| split_key(key).1);
                let _ = writeln!(out, "{}", line(key, setting));
            }
        }
        let rest: Vec<&Setting> = self.settings.iter().filter(|setting| setting.key.is_none()).collect();
        if !rest.is_empty() {
            let _ = writeln!(out, "\n# command line only");
            for setting in rest {
                let name = setting.flag.clone().unwrap_or_else(|| setting.id.clone());
                let _ = writeln!(out, "# {}", line(&name, setting));
            }
        }
        out
    }
}

/// `key = value  # source`, the value redacted when secret, absent when unset.
fn line(key: &str, setting: &Setting) -> String {
    let value = match (&setting.values, setting.secret) {
        (_, true) if setting.source != Source::Unset => "\"(redacted)\"".to_owned(),
        (Some(values), _) if values.len() == 1 => toml_value(&values[0]),
        (Some(values), _) if !values.is_empty() => {
            format!("[{}]", values.iter().map(|value| toml_value(value)).collect::<Vec<_>>().join(", "))
        }
        _ => {
            return format!("# {key} ={:>w$}# {}", "", setting.source, w = 1);
        }
    };
    format!("{key} = {value}  # {}", setting.source)
}

/// A value as TOML writes it: a number or a boolean bare, anything else quoted.
pub(crate) fn toml_value(value: &str) -> String {
    let bare = value == "true"
        || value == "false"
        || (value.parse::<i64>().is_ok() && !value.starts_with('+'))
        || (value.parse::<f64>().is_ok_and(f64::is_finite)
            && value.contains('.')
            && !value.starts_with(['.', '+'])
            && !value.ends_with('.'));
    if bare { value.to_owned() } else { quoted(value) }
}

/// A TOML basic string.
fn quoted(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The argument matches of the command at `path` within `matches`.
fn matches_at<'m>(matches: &'m ArgMatches, path: &[String]) -> Option<&'m ArgMatches> {
    path.iter().skip(1).try_fold(matches, |matches, name| match matches.subcommand() {
        Some((chosen, sub)) if chosen == name => Some(sub),
        _ => None,
    })
}
