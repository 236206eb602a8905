//! Shared test harnesses.
#![allow(dead_code)]

pub mod postgres;
