//! The `ai` kind's build: every bad provider, key reference and model route named at
//! once under its document path; an AI API without endpoints or resources gets its
//! first provider's URL and one resource for every path (`expand`); a control plane
//! that only checks (`SecretsUnread`) never reads a key; a good spec builds the policy
//! at the outermost stage, so its response side sees every refusal.

use std::sync::Arc;

use turnpike_ai::{expand, Ai, AiPolicy};
use turnpike_model::ai::{AiSpec, ModelRoute, ProviderKind, ProviderSpec};
use turnpike_model::resilience::EndpointSpec;
use turnpike_model::{ApiSpec, GatewayFile};
use turnpike_policy::ai::SecretsUnread;
use turnpike_policy::{BuildCx, Policy, PolicyKind, Problem, Runtime, Scratch, Stage};

fn provider(name: &str, url: &str, key: Option<&str>) -> ProviderSpec {
    ProviderSpec {
        name: name.into(),
        kind: ProviderKind::Openai,
        url: url.into(),
        key: key.map(str::to_owned),
        ..ProviderSpec::default()
    }
}

fn route(name: &str, provider: &str) -> ModelRoute {
    ModelRoute {
        name: name.into(),
        provider: provider.into(),
        model: None,
    }
}

fn file(spec: &AiSpec) -> GatewayFile {
    GatewayFile {
        apis: vec![ApiSpec {
            name: "a".into(),
            context: "/a".into(),
            version: "v1".into(),
            ai: Some(spec.clone()),
            ..ApiSpec::default()
        }],
        ..GatewayFile::default()
    }
}

fn build(spec: &AiSpec, runtime: &Runtime) -> (Option<Arc<dyn Policy>>, Vec<Problem>) {
    let mut file = file(spec);
    let mut problems = Vec::new();
    expand(&mut file, &mut problems);
    let mut scratch = Scratch::default();
    let mut cx = BuildCx {
        api: 0,
        at: "apis[0].ai".into(),
        problems: &mut problems,
        runtime,
        file: &file,
        scratch: &mut scratch,
    };
    let built = Ai::build(spec, &mut cx);
    (built, problems)
}

fn paths(problems: &[Problem]) -> Vec<String> {
    problems.iter().map(|p| p.to_string()).collect()
}

#[test]
fn every_bad_setting_is_reported_at_once_with_its_path() {
    let spec = AiSpec {
        providers: vec![
            provider(
                "p1",
                "http://127.0.0.1:9/v1",
                Some("env:TURNPIKE_AI_BUILD_TEST_UNSET"),
            ),
            provider("p2", "ftp://elsewhere", Some("sk-in-clear")),
        ],
        models: vec![route("m", "p1"), route("m", "p1"), route("x", "nobody")],
        ..AiSpec::default()
    };
    let (built, problems) = build(&spec, &Runtime::default());
    let text = paths(&problems).join("\n");
    for want in [
        "apis[0].ai.providers[0].key",
        "TURNPIKE_AI_BUILD_TEST_UNSET",
        "apis[0].ai.providers[1].url",
        "apis[0].ai.providers[1].key",
        "apis[0].ai.models[1].name",
        "apis[0].ai.models[2].provider",
    ] {
        assert!(text.contains(want), "{want} missing from:\n{text}");
    }
    assert!(
        !text.contains("sk-in-clear"),
        "a key in clear is never echoed:\n{text}"
    );
    // Problems are reported; the build still hands back what it could (the loader
    // refuses the file for them).
    let _ = built;
}

#[test]
fn an_ai_api_gets_its_endpoint_and_resources_and_builds_outermost() {
    let spec = AiSpec {
        providers: vec![provider("p1", "http://127.0.0.1:9/v1", None)],
        models: vec![route("gpt-4o-mini", "p1")],
        ..AiSpec::default()
    };
    let mut f = file(&spec);
    let mut problems = Vec::new();
    expand(&mut f, &mut problems);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        f.apis[0].endpoints,
        vec![EndpointSpec::Url("http://127.0.0.1:9/v1".into())]
    );
    assert_eq!(f.apis[0].resources[0].path, "/*");
    let (built, problems) = build(&spec, &Runtime::default());
    assert!(problems.is_empty(), "{problems:?}");
    let built = built.expect("built");
    assert!((&*built as &dyn std::any::Any)
        .downcast_ref::<AiPolicy>()
        .is_some());
    assert_eq!(Ai::stage(&spec), Stage::Envelope);
}

#[test]
fn a_checking_compiler_never_reads_keys() {
    let spec = AiSpec {
        providers: vec![provider(
            "p1",
            "http://127.0.0.1:9/v1",
            Some("env:TURNPIKE_AI_BUILD_TEST_UNSET"),
        )],
        ..AiSpec::default()
    };
    let runtime = Runtime::default();
    runtime.get_or_init(|| SecretsUnread);
    let (built, problems) = build(&spec, &runtime);
    assert!(problems.is_empty(), "{problems:?}");
    assert!(built.is_some());
}
