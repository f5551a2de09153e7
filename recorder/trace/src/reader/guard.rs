//! Decoding guarded against panics: a decoder that panics on a corrupt page gives
//! [`TraceError::Corrupt`] instead, silently.

use crate::TraceError;

/// Runs `work`, turning a panic inside it (the Parquet and Arrow decoders can panic on corrupt
/// pages) into [`TraceError::Corrupt`]. The panic is not printed: the error says what happened.
pub fn guarded<T>(work: impl FnOnce() -> Result<T, TraceError>) -> Result<T, TraceError> {
    quiet_panics::install();
    let _quiet = quiet_panics::Quiet::enter();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(panic) => {
            let reason = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "the decoder gave up".to_string());
            Err(TraceError::Corrupt(reason))
        }
    }
}

/// A panic hook that stays silent on threads inside [`guarded`] and defers to the hook it
/// replaced everywhere else.
mod quiet_panics {
    use std::cell::Cell;
    use std::sync::Once;

    thread_local! {
        static QUIET: Cell<u32> = const { Cell::new(0) };
    }

    pub fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if QUIET.with(Cell::get) == 0 {
                    previous(info);
                }
            }));
        });
    }

    /// Silences panics on this thread while alive.
    pub struct Quiet;

    impl Quiet {
        pub fn enter() -> Quiet {
            QUIET.with(|q| q.set(q.get() + 1));
            Quiet
        }
    }

    impl Drop for Quiet {
        fn drop(&mut self) {
            QUIET.with(|q| q.set(q.get().saturating_sub(1)));
        }
    }
}
