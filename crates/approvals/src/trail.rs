//! Where what happens to approvals is recorded, for one decider's request: fail closed where
//! money or data is about to move ([`Trail::record`], whose line is on disk before the engine
//! goes on), and as a report everywhere else ([`Trail::report`]).

use std::{future::Future, pin::Pin};

/// A line that could not be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the audit trail could not be written")]
pub struct NotRecorded;

/// A boxed future, so that a trail can be chosen at run time.
pub type Recording<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An audit trail, bound to whoever's request it records.
pub trait Trail: Send + Sync {
    /// Record `event` with `fields`, and resolve once it is kept; [`NotRecorded`] if it cannot
    /// be: the caller does nothing that the line was to come before.
    fn record<'a>(&'a self, event: &'a str, fields: serde_json::Value) -> Recording<'a, Result<(), NotRecorded>>;

    /// Record `event` with `fields`, as a report of what happened: a line that cannot be
    /// written is the trail's to say.
    fn report<'a>(&'a self, event: &'a str, fields: serde_json::Value) -> Recording<'a, ()> {
        Box::pin(async move {
            let _ = self.record(event, fields).await;
        })
    }
}

/// No trail: every line is kept, nowhere (tests, and servers run without one).
pub struct NoTrail;

impl Trail for NoTrail {
    fn record<'a>(&'a self, _: &'a str, _: serde_json::Value) -> Recording<'a, Result<(), NotRecorded>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// The field in which a trail's line names the digest of the line before it.
pub const PREV: &str = "prev";

/// A trail that shows tampering: each line carries ([`PREV`]) the SHA-256 of the line before it
/// as written (its bytes without the newline), so an edited or removed line breaks the next
/// line's link ([`check_chain`]). The first line of a trail carries `null`; a file begun after
/// a rotation links to the last line of the file before.
#[derive(Debug, Clone, Default)]
pub struct Chain {
    last: Option<crate::Digest>,
}

impl Chain {
    /// A chain that continues after `last_line` (the last line of the trail so far, if any).
    pub fn after(last_line: Option<&[u8]>) -> Self {
        Self { last: last_line.map(|line| crate::Digest::of_bytes(trim_newline(line))) }
    }

    /// `line`, linked to the line before: [`PREV`] set, written as one JSON line (with its
    /// newline), and remembered as the line the next one links to.
    pub fn link(&mut self, mut line: serde_json::Map<String, serde_json::Value>) -> Vec<u8> {
        line.insert(PREV.to_owned(), serde_json::json!(self.last.map(|digest| digest.to_string())));
        let mut bytes = serde_json::Value::Object(line).to_string().into_bytes();
        self.last = Some(crate::Digest::of_bytes(&bytes));
        bytes.push(b'\n');
        bytes
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

/// A trail whose links all hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linked {
    /// How many lines it holds.
    pub lines: usize,
    /// The digest of the line before its first, when it continues a trail begun elsewhere (a
    /// rotated file's successor): that line is not here to check.
    pub continues: Option<String>,
}

/// Where a trail's links break.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Broken {
    /// A line is not one JSON object, or has no [`PREV`].
    #[error("line {line} is not a line of a linked trail: {why}")]
    Unreadable {
        /// The line's number, from 1.
        line: usize,
        /// What is wrong with it.
        why: String,
    },
    /// A line does not link to the line before it: that line was edited, or lines were
    /// removed or put between.
    #[error("line {line} does not follow the line before it: a line was edited, removed or added before it")]
    Link {
        /// The line's number, from 1.
        line: usize,
    },
}

/// Check that each of `lines` (a trail's, in order: the lines of its files one after another)
/// links to the line before it.
pub fn check_chain<'a>(lines: impl IntoIterator<Item = &'a [u8]>) -> Result<Linked, Broken> {
    let mut before: Option<crate::Digest> = None;
    let mut linked = Linked { lines: 0, continues: None };
    for (index, raw) in lines.into_iter().enumerate() {
        let number = index + 1;
        let raw = trim_newline(raw);
        let unreadable = |why: String| Broken::Unreadable { line: number, why };
        let value: serde_json::Value = serde_json::from_slice(raw).map_err(|error| unreadable(error.to_string()))?;
        let prev = value.get(PREV).ok_or_else(|| unreadable(format!("no {PREV:?}")))?;
        let prev = match prev {
            serde_json::Value::Null => None,
            serde_json::Value::String(hex) => {
                Some(crate::Digest::parse(hex).map_err(|_| unreadable(format!("{PREV:?} is no digest")))?)
            }
            _ => return Err(unreadable(format!("{PREV:?} is no digest"))),
        };
        match (index, before) {
            (0, _) => linked.continues = prev.map(|digest| digest.to_string()),
            (_, expected) if prev == expected => {}
            _ => return Err(Broken::Link { line: number }),
        }
        before = Some(crate::Digest::of_bytes(raw));
        linked.lines = number;
    }
    Ok(linked)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trail(events: &[&str]) -> Vec<Vec<u8>> {
        let mut chain = Chain::after(None);
        events
            .iter()
            .map(|event| chain.link(serde_json::json!({"event": event}).as_object().unwrap().clone()))
            .collect()
    }

    fn check(lines: &[Vec<u8>]) -> Result<Linked, Broken> {
        check_chain(lines.iter().map(Vec::as_slice))
    }

    #[test]
    fn a_linked_trail_checks_and_an_edited_removed_or_added_line_breaks_it() {
        let lines = trail(&["asked", "answered", "releasing", "released"]);
        assert_eq!(check(&lines), Ok(Linked { lines: 4, continues: None }));
        let mut edited = lines.clone();
        edited[1] = String::from_utf8(edited[1].clone()).unwrap().replace("answered", "answerex").into_bytes();
        assert_eq!(check(&edited), Err(Broken::Link { line: 3 }));
        let mut removed = lines.clone();
        removed.remove(1);
        assert_eq!(check(&removed), Err(Broken::Link { line: 2 }));
        let mut added = lines.clone();
        added.insert(2, trail(&["forged"]).remove(0));
        assert_eq!(check(&added), Err(Broken::Link { line: 3 }));
        let mut swapped = lines.clone();
        swapped.swap(1, 2);
        assert_eq!(check(&swapped), Err(Broken::Link { line: 2 }));
        assert!(matches!(check(&[b"not json".to_vec()]), Err(Broken::Unreadable { line: 1, .. })));
        assert!(matches!(check(&[b"{\"event\":\"x\"}".to_vec()]), Err(Broken::Unreadable { line: 1, .. })));
    }

    #[test]
    fn a_file_begun_after_a_rotation_links_to_the_last_line_before_it() {
        let first = trail(&["asked", "answered"]);
        let mut chain = Chain::after(first.last().map(Vec::as_slice));
        let second = vec![chain.link(serde_json::json!({"event": "released"}).as_object().unwrap().clone())];
        let continues = check(&second).unwrap().continues;
        assert_eq!(continues, Some(crate::Digest::of_bytes(trim_newline(&first[1])).to_string()));
        let both: Vec<Vec<u8>> = first.into_iter().chain(second).collect();
        assert_eq!(check(&both), Ok(Linked { lines: 3, continues: None }));
    }
}
