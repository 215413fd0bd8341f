//! Why a requested form or its answer is refused.

/// Why a requested schema is not a form Steward can show ([`super::form_fields`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The schema is not a JSON object.
    #[error("the requested schema is not an object")]
    NotAnObject,
    /// The schema's `type` is not `object`.
    #[error("the requested schema is not of type `object`")]
    NotObjectType,
    /// `properties` is not an object.
    #[error("the requested schema's `properties` is not an object")]
    PropertiesNotAnObject,
    /// A property's schema is not an object; holds the property's name.
    #[error("property `{0}` is not a schema object")]
    PropertyNotAnObject(String),
    /// An `enum` value is not text; holds the property's name.
    #[error("property `{0}` offers a choice that is not text")]
    ChoiceNotText(String),
    /// A `oneOf` alternative has no text `const`; holds the property's name.
    #[error("property `{0}` offers a choice without a text `const`")]
    ChoiceWithoutConst(String),
    /// A property is an array (multiple choice); holds its name.
    #[error("property `{0}` is a list (multiple choice), which Steward's forms do not offer")]
    List(String),
    /// A property has no `type`; holds its name.
    #[error("property `{0}` has no type")]
    NoType(String),
    /// A property's type is not one an elicitation may ask for.
    #[error("property `{name}` is of type `{kind}`, which an elicitation may not ask for")]
    Type {
        /// The property.
        name: String,
        /// Its `type`.
        kind: String,
    },
}

/// Why a form's answer is refused ([`super::answer_form`], [`super::validate`]); the message names the
/// field, for the owner to correct.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// The schema itself is not a form Steward can show.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// An input names no field of the form.
    #[error("`{0}` is not a field of this form")]
    UnknownField(String),
    /// An integer field's text is not a whole number; holds the field's label.
    #[error("`{0}` must be a whole number")]
    NotWholeNumber(String),
    /// A number field's text is not a finite number; holds the field's label.
    #[error("`{0}` must be a number")]
    NotANumber(String),
    /// A yes/no field's text is neither; holds the field's label.
    #[error("`{0}` must be yes or no")]
    NotYesOrNo(String),
    /// The values hold a property the schema does not have.
    #[error("`{0}` was not asked for")]
    NotAskedFor(String),
    /// The schema cannot be compiled as JSON Schema (the validator's message).
    #[error("the requested schema is not valid JSON Schema ({0})")]
    InvalidSchema(String),
    /// The values break the schema: up to three problems, each naming its field.
    #[error("{}", .0.join("; "))]
    Invalid(Vec<String>),
}
