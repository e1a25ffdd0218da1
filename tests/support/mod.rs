//! Test support shared by the integration tests: fakes of the services the binary talks to.

pub mod fake_api;
