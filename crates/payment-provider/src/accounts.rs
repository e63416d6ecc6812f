//! The provider's own accounts: who can sign in on a connect page.
//!
//! Passwords are kept in plain text in memory; this is a stand-in, not a
//! place for real credentials. Checking is done in time that does not depend
//! on where a wrong password differs, nor on whether the username exists.

use std::collections::HashMap;
use std::fmt;

use crate::ids::{IdError, Username};

/// Username → password. [`Accounts::default`] holds the demo accounts.
#[derive(Clone)]
pub struct Accounts {
    passwords: HashMap<Username, String>,
}

/// The demo accounts: two support leads.
pub const DEMO_ACCOUNTS: [(&str, &str); 2] = [("lead-1", "fernhill-lead-1"), ("lead-2", "fernhill-lead-2")];

impl Accounts {
    /// No accounts at all; add some with [`Accounts::with`].
    pub fn empty() -> Accounts {
        Accounts { passwords: HashMap::new() }
    }

    /// The [`DEMO_ACCOUNTS`].
    pub fn demo() -> Accounts {
        DEMO_ACCOUNTS.iter().fold(Accounts::empty(), |accounts, (username, password)| {
            accounts.with(username, password).expect("demo usernames are valid")
        })
    }

    /// These accounts plus `username` with `password` (replacing an account
    /// of that name). Fails for a malformed username.
    pub fn with(mut self, username: &str, password: &str) -> Result<Accounts, IdError> {
        self.passwords.insert(Username::parse(username)?, password.to_owned());
        Ok(self)
    }

    /// True when `username` exists and `password` is its password.
    pub fn check(&self, username: &str, password: &str) -> bool {
        let known = Username::parse(username).ok().and_then(|username| self.passwords.get(&username));
        match known {
            Some(expected) => equal_in_constant_time(expected.as_bytes(), password.as_bytes()),
            None => {
                // Compare anyway, so an unknown name takes as long as a known one.
                let _ = equal_in_constant_time(password.as_bytes(), password.as_bytes());
                false
            }
        }
    }

    /// The usernames, sorted.
    pub fn usernames(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.passwords.keys().map(Username::as_str).collect();
        names.sort_unstable();
        names
    }
}

impl Default for Accounts {
    fn default() -> Accounts {
        Accounts::demo()
    }
}

// Never print passwords.
impl fmt::Debug for Accounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Accounts").field("usernames", &self.usernames()).finish_non_exhaustive()
    }
}

/// Compares two byte strings without stopping at the first difference.
/// (Their lengths may still be told apart by timing.)
pub(crate) fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |difference, (x, y)| difference | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_accounts_sign_in() {
        let accounts = Accounts::default();
        assert!(accounts.check("lead-1", "fernhill-lead-1"));
        assert!(accounts.check("lead-2", "fernhill-lead-2"));
        assert!(!accounts.check("lead-1", "fernhill-lead-2"));
        assert!(!accounts.check("lead-1", ""));
        assert!(!accounts.check("nobody", "fernhill-lead-1"));
        assert!(!accounts.check("", ""));
        assert_eq!(accounts.usernames(), ["lead-1", "lead-2"]);
    }

    #[test]
    fn configurable_and_never_printed() {
        let accounts = Accounts::empty().with("ada", "s3cret").unwrap();
        assert!(accounts.check("ada", "s3cret"));
        assert!(!accounts.check("lead-1", "fernhill-lead-1"));
        assert!(!format!("{accounts:?}").contains("s3cret"));
        assert!(Accounts::empty().with("bad name", "x").is_err());
    }
}
