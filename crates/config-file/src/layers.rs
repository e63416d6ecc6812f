//! The layers applied: the file's keys that no flag and no environment variable set become
//! flags on the command line, and clap parses it as it parses any other.
//!
//! Without a file and without a renamed environment variable in use, the command line is
//! parsed as it came: a process given no file reads nothing more, and pays one walk over its
//! flags (to list them in `--help` under their sections' headings).

use std::{
    collections::BTreeMap,
    ffi::{OsStr, OsString},
    path::PathBuf,
};

use clap::{Arg, ArgAction, Command, FromArgMatches};

use crate::{
    effective::{Effective, Source},
    error::ConfigError,
    file::File,
    schema::Schema,
};

/// A parsed command line, and where each of the chosen command's values came from.
#[derive(Debug)]
pub struct Layered<P> {
    pub parsed: P,
    pub effective: Effective,
}

/// Reads `argv` (the program's name first) as `P` over the configuration file it names
/// (`--config PATH`, else the schema's environment variable), for the command `argv` chooses.
///
/// A clap error (a bad flag, `--help`) comes back as clap's, for `.exit()`; a file that cannot
/// be used comes back as a [`ConfigError`] that names its line and key.
pub fn parse<P: clap::CommandFactory + FromArgMatches>(
    schema: &Schema,
    argv: impl IntoIterator<Item = impl Into<OsString>>,
) -> Result<Layered<P>, LayerError> {
    let mut argv: Vec<OsString> = argv.into_iter().map(Into::into).collect();
    let mut root = schema.headed(P::command());
    let path = command_path(&root, &argv);
    let config =
        config_path(&argv).or_else(|| std::env::var_os(schema.env).filter(|path| !path.is_empty()).map(PathBuf::from));
    let file = config.as_deref().map(|path| File::read(path, schema)).transpose()?;
    let mut filled: BTreeMap<String, Source> = BTreeMap::new();
    let mut warnings = Vec::new();
    if let (Some(keys), Some(command)) = (schema.command(&path), find(&root, &path)) {
        let end = argv.iter().position(|token| token == "--").unwrap_or(argv.len());
        let given = &argv[..end];
        let mut added: Vec<OsString> = Vec::new();
        // Renamed environment variables first: they are the environment's layer.
        for (old, new) in schema.renamed_env {
            let Some(value) = std::env::var_os(old).filter(|value| !value.is_empty()) else { continue };
            let Some(arg) = command.get_arguments().find(|arg| arg.get_env() == Some(OsStr::new(new))) else {
                continue;
            };
            warnings.push(format!("{old} is renamed {new}: the old name works for this release only"));
            if on_command_line(arg, given) || from_env(arg) {
                continue;
            }
            added.extend(as_flags(arg, &[value.to_string_lossy().into_owned()]));
            filled.insert(arg.get_id().to_string(), Source::Environment((*old).to_owned()));
        }
        if let Some(file) = &file {
            // What a closer layer set: the file gives none of it, nor anything it conflicts
            // with (a token in the environment and a token file in the file are one setting).
            let closer: Vec<&Arg> = command
                .get_arguments()
                .filter(|arg| {
                    on_command_line(arg, given) || from_env(arg) || filled.contains_key(arg.get_id().as_str())
                })
                .collect();
            for (key, id) in keys.keys {
                let Some(entry) = file.get(key) else { continue };
                let Some(arg) = command.get_arguments().find(|arg| arg.get_id() == *id) else { continue };
                if closer.iter().any(|set| set.get_id() == arg.get_id() || conflict(command, set, arg)) {
                    continue;
                }
                check_values(arg, &entry.values).map_err(|message| ConfigError::BadValue {
                    path: file.path.clone(),
                    line: entry.line,
                    key: (*key).to_owned(),
                    message,
                })?;
                added.extend(as_flags(arg, &relative_to(file, arg, &entry.values)));
                filled.insert((*id).to_owned(), Source::File { path: file.path.clone(), line: entry.line });
            }
        }
        argv.splice(end..end, added);
    }
    // Parsed in place (clap builds the command it parses): a clone of every flag of every
    // command would cost each start, a stdio server's too.
    let matches = root.try_get_matches_from_mut(&argv).map_err(LayerError::Clap)?;
    let parsed = P::from_arg_matches(&matches).map_err(LayerError::Clap)?;
    let effective = Effective::of(&root, &matches, &path, schema, filled, config, warnings);
    Ok(Layered { parsed, effective })
}

/// Why [`parse`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    /// The command line itself (or `--help`, `--version`): clap's own, for `.exit()`.
    #[error(transparent)]
    Clap(clap::Error),
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The names of the subcommands `argv` chooses, from the program's (`["fernhill-mcp", "serve"]`).
fn command_path(root: &Command, argv: &[OsString]) -> Vec<String> {
    let mut path = vec![root.get_name().to_owned()];
    let mut command = root;
    for token in argv.iter().skip(1) {
        if token == "--" {
            break;
        }
        let Some(word) = token.to_str() else { continue };
        if let Some(sub) = command
            .get_subcommands()
            .find(|sub| sub.get_name() == word || sub.get_all_aliases().any(|alias| alias == word))
        {
            path.push(sub.get_name().to_owned());
            command = sub;
        }
    }
    path
}

/// The command at `path` below `root`.
fn find<'c>(root: &'c Command, path: &[String]) -> Option<&'c Command> {
    path.iter().skip(1).try_fold(root, |command, name| command.find_subcommand(name))
}

/// `--config PATH` or `--config=PATH`, before any `--`.
fn config_path(argv: &[OsString]) -> Option<PathBuf> {
    let mut tokens = argv.iter().skip(1).take_while(|token| *token != "--");
    while let Some(token) = tokens.next() {
        if token == "--config" {
            return tokens.next().map(PathBuf::from);
        }
        if let Some(path) = token.to_str().and_then(|token| token.strip_prefix("--config=")) {
            return Some(PathBuf::from(path));
        }
    }
    None
}

/// Whether `a` and `b` cannot both be given (either says it conflicts with the other).
fn conflict(command: &Command, a: &Arg, b: &Arg) -> bool {
    command.get_arg_conflicts_with(a).iter().any(|other| other.get_id() == b.get_id())
        || command.get_arg_conflicts_with(b).iter().any(|other| other.get_id() == a.get_id())
}

/// Whether `given` (the command line before any `--`) sets `arg`.
fn on_command_line(arg: &Arg, given: &[OsString]) -> bool {
    let longs: Vec<&str> = arg.get_long().into_iter().chain(arg.get_all_aliases().unwrap_or_default()).collect();
    let shorts: Vec<char> =
        arg.get_short().into_iter().chain(arg.get_all_short_aliases().unwrap_or_default()).collect();
    given.iter().skip(1).filter_map(|token| token.to_str()).any(|token| match token.strip_prefix("--") {
        Some(long) => {
            longs.iter().any(|name| long == *name || long.strip_prefix(name).is_some_and(|rest| rest.starts_with('=')))
        }
        None => {
            token.strip_prefix('-').and_then(|short| short.chars().next()).is_some_and(|short| shorts.contains(&short))
        }
    })
}

/// Whether the environment sets `arg` (clap takes an empty variable as unset).
fn from_env(arg: &Arg) -> bool {
    arg.get_env().and_then(std::env::var_os).is_some_and(|value| !value.is_empty())
}

/// A path the file names is the file's neighbour, as a desktop host that launches a program
/// from anywhere needs it to be: a relative `PathBuf` value is read from the file's directory.
fn relative_to(file: &File, arg: &Arg, values: &[String]) -> Vec<String> {
    let is_path = arg.get_value_parser().type_id() == std::any::TypeId::of::<PathBuf>();
    let base = file.path.parent().filter(|base| !base.as_os_str().is_empty());
    match (is_path, base) {
        (true, Some(base)) => values
            .iter()
            .map(|value| match std::path::Path::new(value).is_relative() {
                true => base.join(value).to_string_lossy().into_owned(),
                false => value.clone(),
            })
            .collect(),
        _ => values.to_vec(),
    }
}

/// `values` for `arg` as flags: `--name=value` each, or `--name` alone for a switch that is on.
fn as_flags(arg: &Arg, values: &[String]) -> Vec<OsString> {
    let Some(long) = arg.get_long() else { return Vec::new() };
    match arg.get_action() {
        ArgAction::SetTrue => values
            .iter()
            .filter(|value| *value == "true")
            .map(|_| OsString::from(format!("--{long}")))
            .take(1)
            .collect(),
        ArgAction::SetFalse => values
            .iter()
            .filter(|value| *value == "false")
            .map(|_| OsString::from(format!("--{long}")))
            .take(1)
            .collect(),
        _ => values.iter().map(|value| OsString::from(format!("--{long}={value}"))).collect(),
    }
}

/// Whether each of `values` is one `arg` takes: its own value parser on a command of one
/// argument, so the error names the file's key and not a flag the user never typed.
fn check_values(arg: &Arg, values: &[String]) -> Result<(), String> {
    match arg.get_action() {
        ArgAction::SetTrue | ArgAction::SetFalse => {
            return match values {
                [value] if value == "true" || value == "false" => Ok(()),
                _ => Err("expected true or false".into()),
            };
        }
        ArgAction::Count => return Err("not a setting a file can give".into()),
        ArgAction::Append => {}
        _ if values.len() > 1 => return Err("takes one value, not an array".into()),
        _ => {}
    }
    let mut probe =
        Arg::new("value").long("value").action(ArgAction::Append).value_parser(arg.get_value_parser().clone());
    if let Some(delimiter) = arg.get_value_delimiter() {
        probe = probe.value_delimiter(delimiter);
    }
    let probe = Command::new("probe").no_binary_name(true).arg(probe);
    let flags = values.iter().map(|value| format!("--value={value}"));
    probe.try_get_matches_from(flags).map(drop).map_err(|error| value_error(&error))
}

/// What is wrong with a value, in words: clap's reason without its flags and usage.
fn value_error(error: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let value = match error.get(ContextKind::InvalidValue) {
        Some(ContextValue::String(value)) => format!("{value:?}"),
        _ => "the value".to_owned(),
    };
    if let Some(ContextValue::Strings(valid)) = error.get(ContextKind::ValidValue) {
        return format!("{value} is not one of {}", valid.join(", "));
    }
    match std::error::Error::source(error) {
        Some(source) => format!("{value}: {source}"),
        None => format!("{value} is not a valid value"),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;
    use crate::schema::{CommandKeys, Section};

    #[derive(clap::Parser, Debug)]
    #[command(name = "prog")]
    struct Cli {
        #[arg(long, global = true)]
        config: Option<PathBuf>,
        #[command(subcommand)]
        command: Sub,
    }

    #[derive(clap::Subcommand, Debug)]
    enum Sub {
        Serve(Serve),
    }

    #[derive(clap::Args, Debug)]
    struct Serve {
        #[arg(long, env = "LAYERS_TEST_STORE", default_value = "memory")]
        store: String,
        #[arg(long, env = "LAYERS_TEST_TTL", default_value_t = 60)]
        ttl: u64,
        #[arg(long, env = "LAYERS_TEST_TOKEN", hide_env_values = true)]
        token: Option<String>,
        #[arg(long = "allowed-host")]
        hosts: Vec<String>,
        #[arg(long)]
        insecure: bool,
        #[arg(long, value_enum, default_value_t = Mode::Shed)]
        mode: Mode,
        #[arg(long, conflicts_with = "token")]
        token_file: Option<PathBuf>,
    }

    #[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq)]
    enum Mode {
        Shed,
        Wait,
    }

    static SCHEMA: Schema = Schema {
        env: "LAYERS_TEST_CONFIG",
        sections: &[
            Section { name: "store", title: "Store", about: "Where." },
            Section { name: "limits", title: "Limits", about: "How much." },
        ],
        commands: &[CommandKeys {
            path: &["prog", "serve"],
            keys: &[
                ("store.url", "store"),
                ("store.ttl", "ttl"),
                ("store.token", "token"),
                ("limits.hosts", "hosts"),
                ("limits.insecure", "insecure"),
                ("limits.mode", "mode"),
                ("store.token_file", "token_file"),
            ],
        }],
        renamed_env: &[("LAYERS_TEST_OLD_TTL", "LAYERS_TEST_TTL")],
        examples: &[],
    };

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    /// The environment is the process's: tests that read it take turns.
    static ENVIRONMENT: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn parse_serve(argv: &[&str]) -> Result<(Serve, Effective), LayerError> {
        parse::<Cli>(&SCHEMA, argv.iter().copied()).map(|layered| {
            let Sub::Serve(serve) = layered.parsed.command;
            (serve, layered.effective)
        })
    }

    #[test]
    fn a_flag_beats_the_file_and_the_file_beats_the_default() {
        let _turn = ENVIRONMENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let config = file(
            "[store]\nurl = \"redis://file\"\nttl = 90\ntoken = \"s3cret-token\"\n[limits]\nhosts = [\"a\", \"b\"]\ninsecure = true\nmode = \"wait\"\n",
        );
        let path = config.path().to_str().unwrap();
        let (serve, effective) = parse_serve(&["prog", "serve", "--config", path, "--ttl=5"]).unwrap();
        assert_eq!(
            (serve.store.as_str(), serve.ttl, serve.hosts.as_slice()),
            ("redis://file", 5, ["a", "b"].map(String::from).as_slice())
        );
        assert!(serve.insecure);
        assert_eq!(serve.mode, Mode::Wait);
        assert_eq!(effective.setting("ttl").unwrap().source, Source::CommandLine);
        assert_eq!(effective.setting("store").unwrap().source, Source::File { path: path.into(), line: 2 });
        let shown = effective.render(&SCHEMA);
        assert!(shown.contains(&format!("url = \"redis://file\"  # {path}:2")), "{shown}");
        assert!(shown.contains("ttl = 5  # command line"), "{shown}");
        assert!(shown.contains(&format!("token = \"(redacted)\"  # {path}:4")), "{shown}");
        assert!(!shown.contains("s3cret"), "a secret is never shown: {shown}");
        assert!(shown.contains(&format!("hosts = [\"a\", \"b\"]  # {path}:6")), "{shown}");
    }

    #[test]
    fn without_a_file_defaults_say_so() {
        let _turn = ENVIRONMENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (serve, effective) = parse_serve(&["prog", "serve"]).unwrap();
        assert_eq!((serve.store.as_str(), serve.ttl), ("memory", 60));
        assert_eq!(effective.setting("ttl").unwrap().source, Source::Default);
        assert_eq!(effective.setting("token").unwrap().source, Source::Unset);
        assert!(effective.render(&SCHEMA).contains("# token = # not set"));
    }

    #[test]
    fn a_bad_value_names_the_file_line_and_key() {
        let _turn = ENVIRONMENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let config = file("[store]\nurl = \"x\"\n\nttl = \"soon\"\n");
        let path = config.path().to_str().unwrap();
        let error = parse_serve(&["prog", "serve", "--config", path]).unwrap_err().to_string();
        assert_eq!(error, format!("{path}:4: `store.ttl`: \"soon\": invalid digit found in string"));
        let config = file("[limits]\nmode = \"later\"\n");
        let path = config.path().to_str().unwrap();
        let error = parse_serve(&["prog", "serve", "--config", path]).unwrap_err().to_string();
        assert_eq!(error, format!("{path}:2: `limits.mode`: \"later\" is not one of shed, wait"));
        let config = file("[limits]\ninsecure = \"yes\"\n");
        let path = config.path().to_str().unwrap();
        let error = parse_serve(&["prog", "serve", "--config", path]).unwrap_err().to_string();
        assert_eq!(error, format!("{path}:2: `limits.insecure`: expected true or false"));
    }

    #[test]
    fn the_environment_beats_the_file_and_a_renamed_variable_still_counts_with_a_warning() {
        let _turn = ENVIRONMENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let config = file("[store]\nurl = \"from-file\"\nttl = 90\n");
        let path = config.path().to_str().unwrap();
        // SAFETY: these variables are this test's alone.
        unsafe {
            std::env::set_var("LAYERS_TEST_STORE", "from-env");
            std::env::set_var("LAYERS_TEST_OLD_TTL", "7");
        }
        let outcome = parse_serve(&["prog", "serve", "--config", path]);
        unsafe {
            std::env::remove_var("LAYERS_TEST_STORE");
            std::env::remove_var("LAYERS_TEST_OLD_TTL");
        }
        let (serve, effective) = outcome.unwrap();
        assert_eq!((serve.store.as_str(), serve.ttl), ("from-env", 7));
        assert_eq!(effective.setting("store").unwrap().source, Source::Environment("LAYERS_TEST_STORE".into()));
        assert_eq!(effective.setting("ttl").unwrap().source, Source::Environment("LAYERS_TEST_OLD_TTL".into()));
        assert_eq!(
            effective.warnings,
            ["LAYERS_TEST_OLD_TTL is renamed LAYERS_TEST_TTL: the old name works for this release only"]
        );
    }

    #[test]
    fn a_relative_path_is_the_file_s_neighbour() {
        let _turn = ENVIRONMENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fernhill.toml");
        std::fs::write(&path, "[store]\ntoken_file = \"api.token\"\n").unwrap();
        let (serve, _) = parse_serve(&["prog", "serve", "--config", path.to_str().unwrap()]).unwrap();
        assert_eq!(serve.token_file, Some(dir.path().join("api.token")));
        let (serve, _) =
            parse_serve(&["prog", "serve", "--config", path.to_str().unwrap(), "--token-file", "here.token"]).unwrap();
        assert_eq!(serve.token_file, Some(PathBuf::from("here.token")), "a flag's path is the shell's, as always");
    }

    #[test]
    fn a_closer_layer_s_setting_hides_the_file_s_conflicting_one() {
        let _turn = ENVIRONMENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let config = file("[store]\ntoken_file = \"/etc/api.token\"\n");
        let path = config.path().to_str().unwrap();
        unsafe { std::env::set_var("LAYERS_TEST_TOKEN", "from-env") };
        let outcome = parse_serve(&["prog", "serve", "--config", path]);
        unsafe { std::env::remove_var("LAYERS_TEST_TOKEN") };
        let (serve, _) = outcome.unwrap();
        assert_eq!((serve.token.as_deref(), serve.token_file), (Some("from-env"), None));
    }

    #[test]
    fn a_missing_file_is_named() {
        let _turn = ENVIRONMENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let error = parse_serve(&["prog", "serve", "--config=/nonexistent/fernhill.toml"]).unwrap_err().to_string();
        assert!(error.starts_with("/nonexistent/fernhill.toml: "), "{error}");
    }
}
