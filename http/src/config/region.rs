//! `region`: which region this process serves.

/// Which region this process serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    /// EU (Ireland).
    Eu,
    /// US (Virginia).
    Us,
}

impl Region {
    pub(super) fn parse(text: &str) -> Option<Region> {
        match text {
            "eu" => Some(Region::Eu),
            "us" => Some(Region::Us),
            _ => None,
        }
    }

    /// The config name, `eu` or `us`.
    pub fn name(self) -> &'static str {
        match self {
            Region::Eu => "eu",
            Region::Us => "us",
        }
    }
}
