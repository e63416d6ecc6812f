//! Printing what a server sent: made inert, emphasised where the terminal allows, wrapped.

use std::{io::IsTerminal, sync::OnceLock};

/// Whether to print ANSI styles: stderr (where the host talks to the person) is a terminal and
/// `NO_COLOR` is unset.
pub fn styled() -> bool {
    static STYLED: OnceLock<bool> = OnceLock::new();
    *STYLED.get_or_init(|| std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()))
}

pub fn bold(text: &str) -> String {
    if styled() { format!("\x1b[1m{text}\x1b[0m") } else { text.to_owned() }
}

/// Bold and underlined: the host of a URL.
pub fn emphasis(text: &str) -> String {
    if styled() { format!("\x1b[1;4m{text}\x1b[0m") } else { text.to_owned() }
}

pub fn dim(text: &str) -> String {
    if styled() { format!("\x1b[2m{text}\x1b[0m") } else { text.to_owned() }
}

/// Text a server sent, safe to print: control characters (escape sequences that could redraw
/// the screen, say) and bidirectional overrides are shown escaped, not obeyed. Newlines and
/// tabs stay when `lines` is true.
pub fn inert(text: &str, lines: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi = matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if (c.is_control() && !(lines && matches!(c, '\n' | '\t'))) || bidi {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// One line of server text: inert, newlines shown escaped.
pub fn line(text: &str) -> String {
    inert(text, false)
}

/// Wrap `text` at `width` columns, each line after `indent`.
pub fn wrap(text: &str, indent: &str, width: usize) -> String {
    let mut out = String::new();
    for paragraph in inert(text, true).lines() {
        let mut current = String::new();
        for word in paragraph.split_whitespace() {
            if !current.is_empty() && indent.len() + current.chars().count() + 1 + word.chars().count() > width {
                out.push_str(indent);
                out.push_str(&current);
                out.push('\n');
                current.clear();
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(word);
        }
        out.push_str(indent);
        out.push_str(&current);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_text_cannot_drive_the_terminal() {
        assert_eq!(inert("ok\x1b[2Jgone", true), "ok\\u{1b}[2Jgone");
        assert_eq!(inert("a\nb", true), "a\nb");
        assert_eq!(line("a\nb"), "a\\u{a}b");
        assert_eq!(inert("moc.\u{202e}evil", false), "moc.\\u{202e}evil");
    }

    #[test]
    fn wraps_at_the_width() {
        assert_eq!(wrap("one two three four", "  ", 12), "  one two\n  three four\n");
    }
}
