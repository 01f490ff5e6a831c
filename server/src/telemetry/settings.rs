//! The OpenTelemetry variables, read and checked once at start-up.

use std::collections::HashMap;

use opentelemetry_sdk::trace::Sampler;
use tracing_subscriber::EnvFilter;

use super::TelemetryError;

/// Which spans are exported when `PALGRAPH_TRACES_FILTER` is unset: everything at INFO
/// but sqlx's, and aide's (which builds the OpenAPI document in spans at start-up).
pub const DEFAULT_FILTER: &str = "info,sqlx=warn,aide=warn";

/// Which traces are kept (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Sampling {
    /// `always_on`.
    AlwaysOn,
    /// `always_off`.
    AlwaysOff,
    /// `traceidratio`: this fraction of traces.
    Ratio(f64),
    /// `parentbased_always_on` (the default): as the parent says, else on.
    ParentBasedOn,
    /// `parentbased_always_off`: as the parent says, else off.
    ParentBasedOff,
    /// `parentbased_traceidratio`: as the parent says, else this fraction.
    ParentBasedRatio(f64),
}

impl Sampling {
    /// The SDK's sampler.
    pub(super) fn sampler(self) -> Sampler {
        match self {
            Sampling::AlwaysOn => Sampler::AlwaysOn,
            Sampling::AlwaysOff => Sampler::AlwaysOff,
            Sampling::Ratio(r) => Sampler::TraceIdRatioBased(r),
            Sampling::ParentBasedOn => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
            Sampling::ParentBasedOff => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
            Sampling::ParentBasedRatio(r) => {
                Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(r)))
            }
        }
    }
}

/// Where and how traces are exported, from the standard variables.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct OtelSettings {
    /// The full URL spans are POSTed to (`.../v1/traces`).
    pub endpoint: String,
    /// Headers sent with every export: `OTEL_EXPORTER_OTLP_TRACES_HEADERS`, else
    /// `OTEL_EXPORTER_OTLP_HEADERS` (checked here; the exporter reads the variable itself).
    pub headers: HashMap<String, String>,
    /// The sampler.
    pub sampling: Sampling,
    /// Whether `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names the service.
    pub names_service: bool,
    /// Which spans are exported: an `EnvFilter` directive (`PALGRAPH_TRACES_FILTER`,
    /// default [`DEFAULT_FILTER`]).
    pub filter: String,
}

fn bad(name: &'static str, value: &str, reason: impl Into<String>) -> TelemetryError {
    TelemetryError::Setting {
        name,
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// A set variable: unset and empty alike are `None`.
fn var(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &'static str,
) -> Option<(&'static str, String)> {
    lookup(name)
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .map(|v| (name, v))
}

impl OtelSettings {
    /// The settings `lookup` (the environment, say) holds: `None` when traces are off (no
    /// endpoint set, or `OTEL_SDK_DISABLED=true`).
    ///
    /// # Errors
    /// [`TelemetryError::Setting`] naming the first variable that does not parse, even when
    /// traces are off by `OTEL_SDK_DISABLED` (a typo should not wait for the day it matters).
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, TelemetryError> {
        let disabled = match var(&lookup, "OTEL_SDK_DISABLED") {
            None => false,
            Some((n, v)) => match v.to_ascii_lowercase().as_str() {
                "true" => true,
                "false" => false,
                _ => return Err(bad(n, &v, "expected true or false")),
            },
        };
        let endpoint = match var(&lookup, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some((n, v)) => Some((n, v.clone(), v)),
            None => var(&lookup, "OTEL_EXPORTER_OTLP_ENDPOINT").map(|(n, v)| {
                let full = format!("{}/v1/traces", v.trim_end_matches('/'));
                (n, v, full)
            }),
        };
        if let Some((n, given, full)) = &endpoint {
            check_url(n, given, full)?;
        }
        for name in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            if let Some((n, v)) = var(&lookup, name) {
                if v != "http/protobuf" {
                    return Err(bad(
                        n,
                        &v,
                        "palgraph exports traces over http/protobuf only (an OTLP collector's port 4318)",
                    ));
                }
            }
        }
        let mut headers = HashMap::new();
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            if let Some((n, v)) = var(&lookup, name) {
                headers = pairs(n, &v)?.into_iter().collect();
            }
        }
        let names_service = var(&lookup, "OTEL_SERVICE_NAME").is_some()
            | match var(&lookup, "OTEL_RESOURCE_ATTRIBUTES") {
                Some((n, v)) => pairs(n, &v)?.iter().any(|(k, _)| k == "service.name"),
                None => false,
            };
        let sampling = sampling(&lookup)?;
        let filter = match var(&lookup, "PALGRAPH_TRACES_FILTER") {
            Some((n, v)) => {
                EnvFilter::try_new(&v).map_err(|e| bad(n, &v, e.to_string()))?;
                v
            }
            None => DEFAULT_FILTER.to_string(),
        };
        let Some((_, _, endpoint)) = endpoint.filter(|_| !disabled) else {
            return Ok(None);
        };
        Ok(Some(OtelSettings {
            endpoint,
            headers,
            sampling,
            names_service,
            filter,
        }))
    }
}

/// An http(s) URL with a host.
fn check_url(name: &'static str, given: &str, full: &str) -> Result<(), TelemetryError> {
    let uri: axum::http::Uri = full
        .parse()
        .map_err(|e: axum::http::uri::InvalidUri| bad(name, given, e.to_string()))?;
    match uri.scheme_str() {
        Some("http" | "https") if uri.host().is_some_and(|h| !h.is_empty()) => Ok(()),
        _ => Err(bad(
            name,
            given,
            "expected an http:// or https:// URL such as http://localhost:4318",
        )),
    }
}

/// `key=value,key2=value2`, values percent-decoded (the W3C Baggage form the spec uses).
fn pairs(name: &'static str, value: &str) -> Result<Vec<(String, String)>, TelemetryError> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| bad(name, value, format!("`{item}` is not key=value")))?;
        let k = k.trim();
        if k.is_empty() {
            return Err(bad(name, value, format!("`{item}` has no key")));
        }
        let v = percent_decode(v.trim())
            .ok_or_else(|| bad(name, value, format!("`{item}` has a bad %-escape")))?;
        out.push((k.to_string(), v));
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn sampling(lookup: &impl Fn(&str) -> Option<String>) -> Result<Sampling, TelemetryError> {
    let arg = var(lookup, "OTEL_TRACES_SAMPLER_ARG");
    let ratio = || -> Result<f64, TelemetryError> {
        let Some((n, v)) = &arg else {
            return Ok(1.0);
        };
        match v.parse::<f64>() {
            Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
            _ => Err(bad(n, v, "expected a number from 0 to 1")),
        }
    };
    let Some((n, v)) = var(lookup, "OTEL_TRACES_SAMPLER") else {
        return Ok(Sampling::ParentBasedOn);
    };
    Ok(match v.as_str() {
        "always_on" => Sampling::AlwaysOn,
        "always_off" => Sampling::AlwaysOff,
        "traceidratio" => Sampling::Ratio(ratio()?),
        "parentbased_always_on" => Sampling::ParentBasedOn,
        "parentbased_always_off" => Sampling::ParentBasedOff,
        "parentbased_traceidratio" => Sampling::ParentBasedRatio(ratio()?),
        _ => {
            return Err(bad(
                n,
                &v,
                "expected always_on, always_off, traceidratio, parentbased_always_on, \
                 parentbased_always_off or parentbased_traceidratio",
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<Option<OtelSettings>, TelemetryError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect();
        OtelSettings::from_lookup(move |k| vars.get(k).cloned())
    }

    fn rejected(vars: &[(&str, &str)]) -> String {
        match read(vars) {
            Err(e) => e.to_string(),
            Ok(s) => panic!("accepted {vars:?}: {s:?}"),
        }
    }

    #[test]
    fn no_endpoint_means_no_traces() {
        assert!(read(&[]).unwrap().is_none());
        assert!(read(&[("OTEL_SERVICE_NAME", "x")]).unwrap().is_none());
        assert!(read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "  ")])
            .unwrap()
            .is_none());
    }

    #[test]
    fn the_traces_endpoint_is_used_as_given_and_the_base_one_gets_the_path() {
        let s = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")])
            .unwrap()
            .unwrap();
        assert_eq!(s.endpoint, "http://collector:4318/v1/traces");
        let s = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://wrong:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "https://tempo/otlp/traces",
            ),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.endpoint, "https://tempo/otlp/traces");
        assert_eq!(s.sampling, Sampling::ParentBasedOn);
        assert!(!s.names_service);
    }

    #[test]
    fn sdk_disabled_turns_traces_off_but_bad_values_still_fail() {
        let on = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318")];
        assert!(read(&[on[0], ("OTEL_SDK_DISABLED", "TRUE")])
            .unwrap()
            .is_none());
        assert!(read(&[on[0], ("OTEL_SDK_DISABLED", "false")])
            .unwrap()
            .is_some());
        assert!(rejected(&[on[0], ("OTEL_SDK_DISABLED", "yes")]).contains("OTEL_SDK_DISABLED"));
        let e = rejected(&[
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_SAMPLER", "sometimes"),
        ]);
        assert!(e.contains("OTEL_TRACES_SAMPLER=\"sometimes\""), "{e}");
    }

    #[test]
    fn headers_resources_and_samplers_parse() {
        let s = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Basic%20abc, x-a=1",
            ),
            ("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-a=2"),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "deployment.environment=prod,service.name=api",
            ),
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0.25"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(
            s.headers.len(),
            1,
            "the traces headers replace the general ones"
        );
        assert_eq!(s.headers["x-a"], "2");
        assert!(s.names_service);
        assert_eq!(s.sampling, Sampling::ParentBasedRatio(0.25));
        let s = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "authorization=Basic%20abc, x-a=1",
            ),
        ])
        .unwrap()
        .unwrap();
        assert_eq!(s.headers["authorization"], "Basic abc");
    }

    #[test]
    fn bad_settings_name_the_variable() {
        let on = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318");
        for (vars, name) in [
            (
                vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318")],
                "OTEL_EXPORTER_OTLP_ENDPOINT",
            ),
            (
                vec![("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "ftp://c/x")],
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            ),
            (
                vec![on, ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")],
                "OTEL_EXPORTER_OTLP_PROTOCOL",
            ),
            (
                vec![on, ("OTEL_EXPORTER_OTLP_HEADERS", "novalue")],
                "OTEL_EXPORTER_OTLP_HEADERS",
            ),
            (
                vec![on, ("OTEL_EXPORTER_OTLP_HEADERS", "a=%zz")],
                "OTEL_EXPORTER_OTLP_HEADERS",
            ),
            (
                vec![on, ("OTEL_RESOURCE_ATTRIBUTES", "=x")],
                "OTEL_RESOURCE_ATTRIBUTES",
            ),
            (
                vec![
                    on,
                    ("OTEL_TRACES_SAMPLER", "traceidratio"),
                    ("OTEL_TRACES_SAMPLER_ARG", "2"),
                ],
                "OTEL_TRACES_SAMPLER_ARG",
            ),
            (
                vec![on, ("PALGRAPH_TRACES_FILTER", "info,[")],
                "PALGRAPH_TRACES_FILTER",
            ),
        ] {
            let e = rejected(&vars);
            assert!(e.starts_with(name), "{e} should name {name}");
        }
    }
}
