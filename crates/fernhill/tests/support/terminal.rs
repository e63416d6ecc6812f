//! A person at a terminal: a program (`fernhill host`) in a pseudo-terminal, the test reading
//! its screen and typing what the person would type.

/// A person at a terminal: a program in a pseudo-terminal of 200×50, with what its screen has
/// shown so far.
pub struct Terminal {
    session: expectrl::session::OsSession,
    /// Everything the screen has shown so far.
    pub seen: String,
}

impl Terminal {
    /// `command` started in a pseudo-terminal, each wait for the screen failing after `step`.
    pub fn open(command: std::process::Command, step: std::time::Duration) -> Terminal {
        let mut session = expectrl::Session::spawn(command).expect("the program starts in a pseudo-terminal");
        session.get_process_mut().set_window_size(200, 50).expect("the window size is set");
        session.set_expect_timeout(Some(step));
        Terminal { session, seen: String::new() }
    }

    /// Wait until the screen shows `needle` (`what`); the match and its groups.
    pub fn shows<N: expectrl::Needle>(&mut self, needle: N, what: &str) -> Vec<String> {
        use expectrl::Expect as _;
        match self.session.expect(needle) {
            Ok(found) => {
                self.seen.push_str(&String::from_utf8_lossy(found.as_bytes()));
                found.matches().map(|m| String::from_utf8_lossy(m).into_owned()).collect()
            }
            Err(error) => panic!("the screen never showed {what} ({error}); it showed:\n{}", self.seen),
        }
    }

    /// Type `keys`.
    pub fn types(&mut self, keys: &str) {
        use expectrl::Expect as _;
        self.session.send(keys).expect("keys reach the terminal");
    }

    /// The program has quit with a zero exit status; all the screen showed.
    pub fn quits(mut self) -> String {
        self.shows(expectrl::Eof, "the end of the program");
        let process = self.session.get_process();
        let status = process.wait().expect("the program exits");
        assert_eq!(status, expectrl::process::unix::WaitStatus::Exited(process.pid(), 0), "{}", self.seen);
        self.seen
    }
}
