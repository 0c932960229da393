//! Thunder (Pinkas–Riva): private set intersection over encrypted data that clients have
//! outsourced to a cloud service. Clients upload their sets once, each under its own key;
//! any two (or three) that later agree on a run key hand the service tokens, and the service
//! intersects the stored sets without learning the items or the keys.

pub mod crypto;
