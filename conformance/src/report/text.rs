//! Small text helpers the renderers share.

/// `text` cut to at most `max` characters (on a character boundary), with a
/// note of how much was left out.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let left = text[cut..].chars().count();
            format!("{} … ({left} more characters)", &text[..cut])
        }
    }
}

/// `text` on one line: line breaks become spaces.
pub(crate) fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Items counted in order of first appearance.
#[derive(Debug, Default)]
pub(crate) struct Counted {
    items: Vec<(String, usize)>,
}

impl Counted {
    /// Count one more `item`.
    pub(crate) fn add(&mut self, item: &str) {
        match self.items.iter_mut().find(|(known, _)| known == item) {
            Some((_, count)) => *count += 1,
            None => self.items.push((item.to_owned(), 1)),
        }
    }

    /// Every item with its count, first seen first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, usize)> {
        self.items
            .iter()
            .map(|(item, count)| (item.as_str(), *count))
    }

    /// Whether nothing was counted.
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_keeps_short_text_and_cuts_on_a_character_boundary() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("ééééé", 2), "éé … (3 more characters)");
    }

    #[test]
    fn one_line_joins_lines() {
        assert_eq!(one_line("a\nb\r\nc"), "a b c");
    }

    #[test]
    fn counted_keeps_first_appearance_order() {
        let mut counted = Counted::default();
        for item in ["b", "a", "b"] {
            counted.add(item);
        }
        assert_eq!(counted.iter().collect::<Vec<_>>(), [("b", 2), ("a", 1)]);
    }
}
