//! The one environment every html template of a zone renders in, whether the zone's
//! configuration or a campaign holds it: auto-escaped as HTML (catalogue text, which
//! feeds and deltas write, can never put markup into a store's page), and strict about
//! undefined variables (a misspelt field is an error in the answer, not an empty
//! string). Built here so that the configuration's and the campaigns' templates, and
//! the checks that accept them, cannot drift apart: a template moved from a zone's
//! configuration into a campaign renders the same text.

use minijinja::{AutoEscape, Environment, UndefinedBehavior};

/// An empty environment with the html templates' settings.
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env
}

/// Whether `source` compiles as an html template (the check a configuration or a
/// campaign change passes before it is accepted).
pub fn check(source: &str) -> Result<(), minijinja::Error> {
    environment().template_from_str(source).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_text_is_escaped_and_undefined_is_an_error() {
        let mut env = environment();
        env.add_template("t", "<p>{{ title }}</p>").unwrap();
        let text = env
            .get_template("t")
            .unwrap()
            .render(minijinja::context! { title => "Tee <b>\"Bold\"</b> & Co" })
            .unwrap();
        assert_eq!(
            text,
            "<p>Tee &lt;b&gt;&quot;Bold&quot;&lt;&#x2f;b&gt; &amp; Co</p>"
        );
        env.add_template("u", "{{ missing.field }}").unwrap();
        assert!(env.get_template("u").unwrap().render(()).is_err());
        assert!(check("{% if %}").is_err());
        assert!(check("<p>{{ items[0].Title }}</p>").is_ok());
    }
}
