//! XML Schema: the global declaration index, the linker that resolves declarations into
//! the type model, and the model itself.

pub(crate) mod index;
pub(crate) mod link;
pub mod model;
