//! Values a policy spec is made of, one kind each, parsed the same way by every kind
//! and by the config compiler: durations, sizes, method sets, resource path templates.

pub mod duration;
pub mod methods;
pub mod size;
pub mod template;
