//! The bench kit: `turnpike echo` (the seeds' back end), `turnpike bench run|matrix|report`.
//! Owns load generation and its statistics; depends on no other Turnpike crate at run time
//! (the matrix starts the `turnpike` binary as a process).

pub mod echo;
