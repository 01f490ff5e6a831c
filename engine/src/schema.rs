//! JSON schemas of states and their updates, for servers and tools that describe a graph.
//!
//! `#[derive(State)]` implements [`State::json_schema`](crate::State::json_schema) and
//! [`State::update_json_schema`](crate::State::update_json_schema): an object with one
//! property per field, titled by the struct, described by the doc comments of the struct
//! and its fields, each field's reducer and lifetime in its description. With the `schema`
//! feature (on by default) a field whose type implements [`schemars::JsonSchema`] is
//! described by its type's schema (`Vec<Message>` is, through the engine's own
//! [`Message`](crate::Message) schema); any other field accepts any JSON value. No extra
//! derive is needed on the state itself.

use serde_json::{json, Map, Value};

use crate::state::FieldInfo;

/// One field's part of a generated schema.
#[doc(hidden)]
pub struct FieldDoc {
    /// The field's metadata.
    pub info: FieldInfo,
    /// Its doc comment.
    pub doc: &'static str,
    /// Its type's schema, if known.
    pub schema: Option<Value>,
}

/// Builds the object schema of a state (`update = false`: every field required, as the
/// values of a state always carry each one) or of its update (nothing required, no other
/// properties).
#[doc(hidden)]
pub fn object_schema(
    title: &str,
    doc: &str,
    fields: Vec<FieldDoc>,
    defs: Map<String, Value>,
    update: bool,
) -> Value {
    let mut props = Map::new();
    for f in &fields {
        let mut s = match &f.schema {
            Some(Value::Object(o)) => Value::Object(o.clone()),
            Some(Value::Bool(true)) | None => json!({}),
            Some(other) => other.clone(),
        };
        let lifetime = match f.info.lifetime {
            crate::Lifetime::Persistent => "persistent",
            crate::Lifetime::Transient => "transient",
        };
        let note = format!("reducer: {}; {lifetime}", f.info.reducer);
        let text = doc_text(f.doc);
        let description = if text.is_empty() {
            note
        } else {
            format!("{text} ({note})")
        };
        if let Some(o) = s.as_object_mut() {
            o.insert("description".into(), description.into());
        }
        props.insert(f.info.name.to_string(), s);
    }
    let mut out = Map::new();
    out.insert(
        "$schema".into(),
        "https://json-schema.org/draft/2020-12/schema".into(),
    );
    let title = if update {
        format!("{title}Update")
    } else {
        title.to_string()
    };
    out.insert("title".into(), title.into());
    let text = doc_text(doc);
    if !text.is_empty() {
        out.insert("description".into(), text.into());
    }
    out.insert("type".into(), "object".into());
    out.insert("properties".into(), Value::Object(props));
    if update {
        out.insert("additionalProperties".into(), false.into());
    } else {
        let names: Vec<Value> = fields.iter().map(|f| f.info.name.into()).collect();
        out.insert("required".into(), Value::Array(names));
    }
    if !defs.is_empty() {
        out.insert("$defs".into(), Value::Object(defs));
    }
    Value::Object(out)
}

/// The schema of a state known only by its fields (no types): what the default
/// implementation of [`State::json_schema`](crate::State::json_schema) returns.
pub fn fields_schema(title: &str, fields: &[FieldInfo], update: bool) -> Value {
    let title = title.rsplit("::").next().unwrap_or(title);
    let docs = fields
        .iter()
        .map(|f| FieldDoc {
            info: *f,
            doc: "",
            schema: None,
        })
        .collect();
    object_schema(title, "", docs, Map::new(), update)
}

/// A doc comment's lines joined: trimmed, paragraphs kept.
fn doc_text(doc: &str) -> String {
    let lines: Vec<&str> = doc.lines().map(str::trim).collect();
    lines.join("\n").trim().to_string()
}

#[cfg(feature = "schema")]
pub use with_schemars::*;

#[cfg(feature = "schema")]
mod with_schemars {
    use std::marker::PhantomData;

    use schemars::{JsonSchema, SchemaGenerator};
    use serde_json::Value;

    /// Collects the field schemas of one state and their shared definitions.
    #[doc(hidden)]
    #[derive(Default)]
    pub struct Collector {
        /// The generator the field schemas share.
        pub generator: SchemaGenerator,
    }

    impl Collector {
        /// The definitions the fields referred to (`$defs`).
        pub fn definitions(&mut self) -> serde_json::Map<String, Value> {
            self.generator.take_definitions(true)
        }
    }

    /// A type to probe for a schema (autoref specialization: `(&&Probe::<T>::new())`
    /// picks [`ViaJsonSchema`] when `T: JsonSchema`, else [`ViaAny`]).
    #[doc(hidden)]
    pub struct Probe<T: ?Sized>(PhantomData<T>);

    impl<T: ?Sized> Probe<T> {
        /// A probe.
        #[allow(clippy::new_without_default)]
        pub fn new() -> Self {
            Probe(PhantomData)
        }
    }

    /// The schema of a type that has one.
    #[doc(hidden)]
    pub trait ViaJsonSchema {
        /// Its schema (a reference into the collector's definitions when it has a name).
        fn field_schema(&self, c: &mut Collector) -> Option<Value>;
    }

    impl<T: JsonSchema + ?Sized> ViaJsonSchema for &Probe<T> {
        fn field_schema(&self, c: &mut Collector) -> Option<Value> {
            Some(c.generator.subschema_for::<T>().to_value())
        }
    }

    /// Any type: no schema.
    #[doc(hidden)]
    pub trait ViaAny {
        /// None.
        fn field_schema(&self, c: &mut Collector) -> Option<Value>;
    }

    impl<T: ?Sized> ViaAny for Probe<T> {
        fn field_schema(&self, _c: &mut Collector) -> Option<Value> {
            None
        }
    }

    impl JsonSchema for crate::Message {
        fn schema_name() -> std::borrow::Cow<'static, str> {
            "Message".into()
        }

        fn json_schema(_: &mut SchemaGenerator) -> schemars::Schema {
            schemars::json_schema!({
                "description": "A chat message (LangChain's message shape).",
                "type": "object",
                "properties": {
                    "type": {
                        "description": "Who wrote it (`role` is accepted on input, as are `user` and `assistant`).",
                        "enum": ["human", "ai", "system", "tool", "remove", "user", "assistant"]
                    },
                    "content": {
                        "description": "The text, or a list of content blocks (text, image, file, ...) kept whole.",
                        "anyOf": [{"type": "string"}, {"type": "array"}]
                    },
                    "id": {"type": ["string", "null"], "description": "A stable id; assigned when missing."},
                    "name": {"type": ["string", "null"], "description": "An optional author name."},
                    "metadata": {"type": "object", "description": "Free-form metadata."},
                    "tool_calls": {
                        "type": "array",
                        "description": "An AI message's tool calls: `{id, name, args, type: \"tool_call\"}`.",
                        "items": {"type": "object"}
                    },
                    "tool_call_id": {"type": "string", "description": "A tool message: the call it answers."}
                }
            })
        }
    }
}

#[cfg(not(feature = "schema"))]
pub use without_schemars::*;

#[cfg(not(feature = "schema"))]
mod without_schemars {
    use std::marker::PhantomData;

    use serde_json::Value;

    /// Collects nothing (the `schema` feature is off).
    #[doc(hidden)]
    #[derive(Default)]
    pub struct Collector;

    impl Collector {
        /// No definitions.
        pub fn definitions(&mut self) -> serde_json::Map<String, Value> {
            serde_json::Map::new()
        }
    }

    /// A type to probe for a schema (none without the `schema` feature).
    #[doc(hidden)]
    pub struct Probe<T: ?Sized>(PhantomData<T>);

    impl<T: ?Sized> Probe<T> {
        /// A probe.
        #[allow(clippy::new_without_default)]
        pub fn new() -> Self {
            Probe(PhantomData)
        }
    }

    /// Never implemented without the `schema` feature.
    #[doc(hidden)]
    pub trait ViaJsonSchema {
        /// Never called.
        fn field_schema(&self, c: &mut Collector) -> Option<Value>;
    }

    /// Any type: no schema.
    #[doc(hidden)]
    pub trait ViaAny {
        /// None.
        fn field_schema(&self, c: &mut Collector) -> Option<Value>;
    }

    impl<T: ?Sized> ViaAny for Probe<T> {
        fn field_schema(&self, _c: &mut Collector) -> Option<Value> {
            None
        }
    }
}

#[cfg(all(test, feature = "schema"))]
mod tests {
    use serde::{Deserialize, Serialize};

    use crate::{AddMessages, Message, State};

    /// A ticket being triaged.
    #[derive(Clone, Default, Debug, Serialize, Deserialize, crate::State)]
    struct Ticket {
        /// The conversation.
        #[state(reducer = AddMessages)]
        messages: Vec<Message>,
        /// How urgent, 1 to 5.
        #[state(transient)]
        urgency: Option<u8>,
        /// No schema for this one.
        opaque: NoSchema,
    }

    #[derive(Clone, Default, Debug, Serialize, Deserialize)]
    struct NoSchema {
        x: u8,
    }

    #[test]
    fn a_derived_state_describes_its_fields_and_update() {
        let s = Ticket::json_schema();
        assert_eq!(s["title"], "Ticket");
        assert_eq!(s["description"], "A ticket being triaged.");
        let p = &s["properties"];
        assert_eq!(p["messages"]["type"], "array");
        assert_eq!(p["messages"]["items"]["$ref"], "#/$defs/Message");
        assert!(s["$defs"]["Message"]["properties"]["content"].is_object());
        assert_eq!(
            p["urgency"]["description"],
            "How urgent, 1 to 5. (reducer: overwrite; transient)"
        );
        assert!(p["urgency"]["type"].to_string().contains("integer"));
        assert!(p["opaque"].get("type").is_none());
        assert_eq!(s["required"].as_array().map(Vec::len), Some(3));
        let u = Ticket::update_json_schema();
        assert_eq!(u["title"], "TicketUpdate");
        assert_eq!(u["additionalProperties"], false);
        assert!(u.get("required").is_none());
        assert_eq!(u["properties"]["messages"]["type"], "array");
    }
}
