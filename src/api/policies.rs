//! The policies REST surface (docs/rest.md, Policies): the person's "always allow" policies,
//! listed, made from a card, revoked.

use signoff_protocol::rest::{NewPolicy, Policy, PolicyList};

use super::{http, ApiError};
use crate::state::route::encode;

/// `GET /api/policies`.
pub async fn list() -> Result<Vec<Policy>, ApiError> {
    let list: PolicyList = http::get("/api/policies").await?;
    Ok(list.policies)
}

/// `POST /api/policies`: the policy as stored.
pub async fn create(policy: &NewPolicy) -> Result<Policy, ApiError> {
    let url = "/api/policies";
    let body = serde_json::to_string(policy).map_err(|err| ApiError::Decode(err.to_string()))?;
    http::post(url, body).await
}

/// `DELETE /api/policies/{id}`.
pub async fn revoke(id: &str) -> Result<(), ApiError> {
    http::delete(&format!("/api/policies/{}", encode(id))).await
}
