//! Extractors whose rejections are answered in the API's error shape: a JSON body
//! ([`Body`]), a query string ([`Params`]) and the authenticated caller ([`Caller`]).
//! Handlers take these and never see axum's own rejections.

use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::{ApiError, ErrorCode};
use crate::auth::Principal;

/// A JSON request body: 400/413/415/422 naming what is wrong with it.
#[derive(Debug)]
pub struct Body<T>(pub T);

impl<S, T> FromRequest<S> for Body<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, ApiError> {
        axum::Json::<T>::from_request(request, state)
            .await
            .map(|axum::Json(v)| Body(v))
            .map_err(|e| ApiError::from_body_rejection(e.status(), &e.body_text()))
    }
}

/// The query string: 400 naming the parameter.
#[derive(Debug)]
pub struct Params<T>(pub T);

impl<S, T> FromRequestParts<S> for Params<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(v)| Params(v))
            .map_err(|e| ApiError::bad_request(format!("invalid query string: {}", e.body_text())))
    }
}

/// Who is calling: the principal the server's authentication layer left in the request.
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        parts
            .extensions
            .get::<Principal>()
            .cloned()
            .map(Caller)
            .ok_or_else(|| {
                // Only a router mounted without the authentication layer gets here.
                ApiError::new(
                    ErrorCode::Internal,
                    "the request was not authenticated (the API is mounted without its \
                     authentication layer)",
                )
            })
    }
}
