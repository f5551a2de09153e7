//! PNG output through plotters' bitmap backend, with the vendored DejaVu Sans font so text draws
//! without any system font.

use std::path::Path;

use plotters::prelude::*;

use super::figure::{draw, Figure};
use super::RenderError;

/// Writes the figure as a PNG file.
pub fn write_png(fig: &Figure, path: &Path) -> Result<(), RenderError> {
    super::font::register()?;
    let size = (fig.width.max(1) as u32, fig.height.max(1) as u32);
    let area = BitMapBackend::new(path, size).into_drawing_area();
    draw(&area, fig).map_err(|e| RenderError::Draw(e.to_string()))?;
    area.present()
        .map_err(|e| RenderError::Draw(format!("{}: {e}", path.display())))?;
    Ok(())
}
