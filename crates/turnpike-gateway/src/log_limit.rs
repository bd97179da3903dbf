//! Rate-limited logging for floods (an upstream down under load, a connection cap
//! reached): the limiter lives in `turnpike-policy` so the error table's own log lines
//! use it too; re-exported here for the gateway's modules.

pub(crate) use turnpike_policy::log_limit::LogLimit;
