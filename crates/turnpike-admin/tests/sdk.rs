//! The Developer Portal's SDK download (`GET /api/am/devportal/v1/apis/{id}/sdks/{language}`)
//! over a real socket with curl: for a published API, each language's zip unpacks (Python's
//! zipfile checks every CRC) and builds with its own toolchain: tsc for TypeScript, an
//! import for Python, javac (against the client's Jackson jars from the Maven local
//! repository) for Java. Needs what scripts/install-test-deps.sh installs: java, the
//! openapi-generator-cli jar, the UI's node_modules (tsc), Python's pydantic.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use support::control_plane;
use turnpike_store::testing::TestDbs;

const SDKS: &str = "/api/am/devportal/v1/apis";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Downloads `path` as `sub` into `file`; returns the status and the content type.
fn download(base: &str, path: &str, file: &Path) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-sS", "-u", "sub:password1", "-o"])
        .arg(file)
        .args(["-w", "%{http_code} %{content_type}"])
        .arg(format!("{base}{path}"))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (code, ctype) = text.split_once(' ').unwrap_or((&text, ""));
    (code.parse().unwrap_or(0), ctype.to_string())
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The jars a java.net.http client of openapi-generator 7.17.0 compiles against.
fn java_classpath() -> String {
    let m2 = PathBuf::from(std::env::var("HOME").expect("HOME")).join(".m2/repository");
    [
        "com/fasterxml/jackson/core/jackson-core/2.19.2/jackson-core-2.19.2.jar",
        "com/fasterxml/jackson/core/jackson-annotations/2.19.2/jackson-annotations-2.19.2.jar",
        "com/fasterxml/jackson/core/jackson-databind/2.19.2/jackson-databind-2.19.2.jar",
        "com/fasterxml/jackson/datatype/jackson-datatype-jsr310/2.19.2/jackson-datatype-jsr310-2.19.2.jar",
        "org/openapitools/jackson-databind-nullable/0.2.8/jackson-databind-nullable-0.2.8.jar",
        "com/google/code/findbugs/jsr305/3.0.2/jsr305-3.0.2.jar",
        "jakarta/annotation/jakarta.annotation-api/1.3.5/jakarta.annotation-api-1.3.5.jar",
    ]
    .iter()
    .map(|j| {
        let p = m2.join(j);
        assert!(p.is_file(), "{} missing: run scripts/install-test-deps.sh", p.display());
        p.display().to_string()
    })
    .collect::<Vec<_>>()
    .join(":")
}

fn java_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            java_sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "java") {
            out.push(p);
        }
    }
}

/// Unpacks the zip and builds the client in it.
fn builds(zip: &Path, language: &str, work: &Path) {
    let dir = work.join(language);
    run(
        Command::new("python3")
            .args(["-m", "zipfile", "-e"])
            .arg(zip)
            .arg(&dir),
        "unzip",
    );
    let client = dir.join(format!("pet-store-v1-{language}"));
    assert!(
        client.is_dir(),
        "the zip holds one folder named after the API"
    );
    match language {
        "typescript" => run(
            Command::new(root().join("ui/node_modules/.bin/tsc"))
                .args(["--noEmit", "-p"])
                .arg(&client),
            "tsc",
        ),
        "python" => run(
            Command::new("python3")
                .args([
                    "-c",
                    "from pet_store_v1_client.api.default_api import DefaultApi; \
                     from pet_store_v1_client.models.pet import Pet; \
                     print(Pet(name='rex').to_json())",
                ])
                .current_dir(&client),
            "python import",
        ),
        _ => {
            let mut sources = Vec::new();
            java_sources(&client.join("src/main"), &mut sources);
            assert!(sources.len() > 5, "java sources: {sources:?}");
            run(
                Command::new("javac")
                    .args(["-nowarn", "-d"])
                    .arg(work.join("classes"))
                    .args(["-cp", &java_classpath()])
                    .args(&sources),
                "javac",
            );
        }
    }
}

async fn each_language_downloads_and_builds(url: String) {
    let cp = control_plane(&url).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(turnpike_admin::serve(
        listener,
        cp.state.clone(),
        std::future::pending(),
    ));
    let definition = json!({"openapi": "3.0.3", "info": {"title": "Pet Store", "version": "v1"},
        "paths": {"/pets": {"get": {"operationId": "listPets", "responses": {"200": {"description": "pets",
            "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}}}}},
            "post": {"operationId": "addPet", "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
                "responses": {"201": {"description": "added"}}}}},
        "components": {"schemas": {"Pet": {"type": "object", "required": ["name"],
            "properties": {"id": {"type": "integer", "format": "int64"}, "name": {"type": "string"}}}}}});
    let r = cp
        .post(
            "/api/am/publisher/v1/apis/import-openapi",
            "pub",
            json!({"definition": definition, "additionalProperties": {"context": "/pets",
                "endpoints": ["http://127.0.0.1:9"]}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.json);
    let id = r.json["id"].as_str().expect("id").to_string();
    let work = tempfile::tempdir().expect("tmp");
    let zip = work.path().join("sdk.zip");
    let (status, _) = download(&base, &format!("{SDKS}/{id}/sdks/typescript"), &zip);
    assert_eq!(status, 404, "a created (unpublished) API has no SDK");
    assert_eq!(cp.lifecycle(&id, "Publish").await.status, 200);
    let (status, _) = download(&base, &format!("{SDKS}/{id}/sdks/cobol"), &zip);
    assert_eq!(
        status,
        400,
        "{}",
        std::fs::read_to_string(&zip).unwrap_or_default()
    );
    for language in ["typescript", "python", "java"] {
        let (status, ctype) = download(&base, &format!("{SDKS}/{id}/sdks/{language}"), &zip);
        assert_eq!(
            (status, ctype.as_str()),
            (200, "application/zip"),
            "{language}: {}",
            std::fs::read_to_string(&zip).unwrap_or_default()
        );
        builds(&zip, language, work.path());
    }
}

const CASES: &[(&str, turnpike_store::testing::Case)] =
    turnpike_store::cases![each_language_downloads_and_builds];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sdk_downloads_build_on_sqlite() {
    TestDbs::sqlite().run(CASES).await;
}
