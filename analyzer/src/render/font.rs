//! The one font of every picture: DejaVu Sans (see `assets/DejaVuSans-LICENSE.txt`), compiled in
//! so PNG text needs no system font.

use std::sync::OnceLock;

use plotters::style::{register_font, FontStyle};

use super::RenderError;

static DEJAVU_SANS: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// Registers the font as `sans-serif`, once.
pub fn register() -> Result<(), RenderError> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok =
        *DONE.get_or_init(|| register_font("sans-serif", FontStyle::Normal, DEJAVU_SANS).is_ok());
    if ok {
        Ok(())
    } else {
        Err(RenderError::Font)
    }
}
