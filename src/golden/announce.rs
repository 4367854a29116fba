//! Where the image builds say what they are doing: the run's progress display, which sits
//! above this layer, so the builds see only this one method of it.

/// A display the builds print their one-line announcements on ("populating an image of
/// …"). `Sync`: images are built on several threads at once.
pub trait Announce: Sync {
    /// Prints `line` without disturbing whatever else the display shows.
    fn println(&self, line: &str);
}
