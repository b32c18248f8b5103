//! Store management: whole-namespace and whole-session removal, inspection, export and
//! import, backup and integrity checks. One module per job; each adds `Mnem` methods (the
//! public documentation) over `Engine` methods that go through the same write lock and
//! commit path as every other write.

mod backup;
mod check;
mod compact;
mod export;
mod forget;
mod import;
mod inspect;
mod session;
mod view;

pub use check::CheckReport;
pub use export::{Progress, Transfer, EXPORT_VERSION};
pub use forget::Forgotten;
pub use inspect::{KeyCount, NamespaceInfo, NamespacePage, NamespaceStats, MAX_GET_EPISODES, MAX_NAMESPACE_PAGE};
