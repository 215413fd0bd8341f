//! Pieces of the OpenAPI document's schemas that handwritten `ToSchema` impls share.

/// A string schema allowing exactly `values`.
pub(crate) fn string_enum(values: &[&str], description: &str) -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(values.iter().copied()))
        .description(Some(description))
        .build()
}
