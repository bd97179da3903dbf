//! Real handshakes on 127.0.0.1:0 with tokio-rustls over the configs this crate builds:
//! a server certificate replaced on disk is presented by the next handshake a second
//! later (no restart), a half-written replacement is refused and the previous pair kept;
//! a client trusting another CA is refused; with a client CA set, a client without a
//! certificate is refused and one with a certificate the CA signed gets in.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use turnpike_tls::{client_config, server_config, ClientTls, ServerTls, TlsSource};

struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
    pem: String,
}

fn ca(name: &str) -> Ca {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let cert = params.self_signed(&key).expect("ca");
    Ca {
        pem: cert.pem(),
        cert,
        key,
    }
}

/// A leaf the CA signs: (cert PEM, key PEM, DER).
fn leaf(ca: &Ca, usage: ExtendedKeyUsagePurpose) -> (String, String, Vec<u8>) {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).expect("params");
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, &ca.cert, &ca.key).expect("sign");
    (cert.pem(), key.serialize_pem(), cert.der().to_vec())
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

/// Serves TLS handshakes forever; each connection gets one byte and is closed.
async fn serve(cfg: Arc<rustls::ServerConfig>) -> std::net::SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr");
    let acceptor = tokio_rustls::TlsAcceptor::from(cfg);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = l.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(mut tls) = acceptor.accept(tcp).await {
                    let _ = tls.write_all(b"k").await;
                    let _ = tls.shutdown().await;
                }
            });
        }
    });
    addr
}

/// Handshakes and reads the byte: the server's certificate, or the error. Every
/// handshake is a full one: a resumed TLS session carries no certificate (the client
/// would report the one of the session it resumed).
async fn connect(
    addr: std::net::SocketAddr,
    cfg: Arc<rustls::ClientConfig>,
) -> Result<CertificateDer<'static>, String> {
    let mut cfg = (*cfg).clone();
    cfg.resumption = rustls::client::Resumption::disabled();
    let cfg = Arc::new(cfg);
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let name = ServerName::try_from("localhost").map_err(|e| e.to_string())?;
    let mut tls = tokio_rustls::TlsConnector::from(cfg)
        .connect(name, tcp)
        .await
        .map_err(|e| e.to_string())?;
    let mut b = [0u8; 1];
    tls.read_exact(&mut b).await.map_err(|e| e.to_string())?;
    let (_, conn) = tls.get_ref();
    conn.peer_certificates()
        .and_then(|c| c.first().cloned())
        .ok_or_else(|| "no certificate".to_string())
}

#[tokio::test]
async fn a_rotated_certificate_is_served_without_a_restart_and_a_broken_one_is_not() {
    let dir = tempfile::tempdir().expect("dir");
    let ca = ca("rotation CA");
    let ca_file = write(dir.path(), "ca.pem", &ca.pem);
    let (cert_a, key_a, der_a) = leaf(&ca, ExtendedKeyUsagePurpose::ServerAuth);
    let cert = write(dir.path(), "cert.pem", &cert_a);
    let key = write(dir.path(), "key.pem", &key_a);
    let served = server_config(&ServerTls {
        source: TlsSource::Files {
            cert: cert.clone(),
            key: key.clone(),
        },
        alpn: Vec::new(),
        client_ca: None,
    })
    .expect("server config");
    let addr = serve(served.config.clone()).await;
    let client = client_config(&ClientTls {
        ca: Some(ca_file),
        ..ClientTls::default()
    })
    .expect("client config");
    assert_eq!(
        connect(addr, client.clone()).await.expect("first").as_ref(),
        der_a
    );

    let (cert_b, key_b, der_b) = leaf(&ca, ExtendedKeyUsagePurpose::ServerAuth);
    std::fs::write(&key, key_b).expect("rotate key");
    std::fs::write(&cert, cert_b).expect("rotate cert");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let got = connect(addr, client.clone())
            .await
            .expect("during rotation");
        if got.as_ref() == der_b {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still the old certificate"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(served.reloads(), 1);

    // Half a rotation (a certificate whose key is not there yet) is not taken.
    let (cert_c, _, _) = leaf(&ca, ExtendedKeyUsagePurpose::ServerAuth);
    std::fs::write(&cert, cert_c).expect("half rotation");
    tokio::time::sleep(Duration::from_millis(1200)).await;
    for _ in 0..3 {
        let got = connect(addr, client.clone()).await.expect("kept pair");
        assert_eq!(got.as_ref(), der_b, "the previous pair stays");
    }
    assert_eq!(served.reloads(), 1);
}

#[tokio::test]
async fn clients_verify_the_server_and_a_client_ca_requires_a_signed_client_certificate() {
    let dir = tempfile::tempdir().expect("dir");
    let ca_server = ca("server CA");
    let ca_clients = ca("client CA");
    let other = ca("someone else");
    let (cert, key, _) = leaf(&ca_server, ExtendedKeyUsagePurpose::ServerAuth);
    let served = server_config(&ServerTls {
        source: TlsSource::Files {
            cert: write(dir.path(), "s.pem", &cert),
            key: write(dir.path(), "s.key", &key),
        },
        alpn: Vec::new(),
        client_ca: Some(write(dir.path(), "clients.pem", &ca_clients.pem)),
    })
    .expect("server config");
    let addr = serve(served.config.clone()).await;
    let server_ca = write(dir.path(), "server-ca.pem", &ca_server.pem);

    let wrong_ca = client_config(&ClientTls {
        ca: Some(write(dir.path(), "other.pem", &other.pem)),
        ..ClientTls::default()
    })
    .expect("client config");
    let err = connect(addr, wrong_ca)
        .await
        .expect_err("an unknown issuer is refused");
    assert!(
        err.contains("UnknownIssuer") || err.contains("certificate"),
        "{err}"
    );

    let no_cert = client_config(&ClientTls {
        ca: Some(server_ca.clone()),
        ..ClientTls::default()
    })
    .expect("client config");
    assert!(
        connect(addr, no_cert).await.is_err(),
        "mTLS: no client certificate"
    );

    let (c_cert, c_key, _) = leaf(&other, ExtendedKeyUsagePurpose::ClientAuth);
    let foreign = client_config(&ClientTls {
        ca: Some(server_ca.clone()),
        cert: Some(write(dir.path(), "f.pem", &c_cert)),
        key: Some(write(dir.path(), "f.key", &c_key)),
    })
    .expect("client config");
    assert!(
        connect(addr, foreign).await.is_err(),
        "mTLS: a certificate of another CA"
    );

    let (c_cert, c_key, _) = leaf(&ca_clients, ExtendedKeyUsagePurpose::ClientAuth);
    let good = client_config(&ClientTls {
        ca: Some(server_ca),
        cert: Some(write(dir.path(), "c.pem", &c_cert)),
        key: Some(write(dir.path(), "c.key", &c_key)),
    })
    .expect("client config");
    connect(addr, good)
        .await
        .expect("a client the CA signed gets in");
}
