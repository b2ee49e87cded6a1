//! Each view's data, below the transitions that change it and the `Modal` stack that holds
//! it: what a view shows and how it is built from `State`, never how a key changes it.

pub mod consent;
pub mod inbox;
pub mod roots;
pub mod sampling;
pub mod stats;
pub mod wire;
