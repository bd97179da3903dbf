//! Certificates and keys from PEM files, and the self-signed pair (localhost, 127.0.0.1,
//! ::1) generated once into `<data-dir>/tls/` and reused on later starts.

use std::path::{Path, PathBuf};

use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: no certificate found in the PEM file")]
    NoCert { path: PathBuf },
    #[error("{path}: no private key found in the PEM file")]
    NoKey { path: PathBuf },
    #[error("generating a self-signed certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("invalid certificate or key: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("--tls-cert and --tls-key must be given together")]
    HalfPair,
}

/// Where a listener's certificate comes from.
#[derive(Debug, Clone)]
pub enum TlsSource {
    /// PEM files, reloaded when either changes.
    Files { cert: PathBuf, key: PathBuf },
    /// Generated into (or reused from) `<dir>/tls/{cert,key}.pem`.
    SelfSigned { data_dir: PathBuf },
}

impl TlsSource {
    /// From a pair of optional flags: both files, or neither (self-signed in `data_dir`).
    pub fn from_flags(
        cert: Option<&Path>,
        key: Option<&Path>,
        data_dir: &Path,
    ) -> Result<TlsSource, TlsError> {
        match (cert, key) {
            (Some(cert), Some(key)) => Ok(TlsSource::Files {
                cert: cert.to_owned(),
                key: key.to_owned(),
            }),
            (None, None) => Ok(TlsSource::SelfSigned {
                data_dir: data_dir.to_owned(),
            }),
            _ => Err(TlsError::HalfPair),
        }
    }

    /// The PEM certificate path this source serves (for clients that must trust it).
    pub fn cert_path(&self) -> PathBuf {
        match self {
            TlsSource::Files { cert, .. } => cert.clone(),
            TlsSource::SelfSigned { data_dir } => data_dir.join("tls").join("cert.pem"),
        }
    }

    /// The certificate and key files, generating the self-signed pair if needed.
    pub(crate) fn files(&self) -> Result<(PathBuf, PathBuf), TlsError> {
        match self {
            TlsSource::Files { cert, key } => Ok((cert.clone(), key.clone())),
            TlsSource::SelfSigned { data_dir } => ensure_self_signed(data_dir),
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

pub(crate) fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|source| TlsError::Read {
            path: path.to_owned(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCert {
            path: path.to_owned(),
        });
    }
    Ok(certs)
}

pub(crate) fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read(path)?;
    rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|source| TlsError::Read {
            path: path.to_owned(),
            source,
        })?
        .ok_or_else(|| TlsError::NoKey {
            path: path.to_owned(),
        })
}

fn ensure_self_signed(data_dir: &Path) -> Result<(PathBuf, PathBuf), TlsError> {
    let dir = data_dir.join("tls");
    let cert = dir.join("cert.pem");
    let key = dir.join("key.pem");
    if cert.exists() && key.exists() {
        return Ok((cert, key));
    }
    let write_err = |path: &Path| {
        let path = path.to_owned();
        move |source| TlsError::Write { path, source }
    };
    std::fs::create_dir_all(&dir).map_err(write_err(&dir))?;
    let names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    let key_pair = rcgen::KeyPair::generate()?;
    let c = rcgen::CertificateParams::new(names)?.self_signed(&key_pair)?;
    // Key first and owner-only; the cert's presence marks a complete pair.
    write_private(&key, key_pair.serialize_pem().as_bytes()).map_err(write_err(&key))?;
    std::fs::write(&cert, c.pem()).map_err(write_err(&cert))?;
    tracing::info!(cert = %cert.display(), "generated a self-signed TLS certificate");
    Ok((cert, key))
}

fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path)?.write_all(data)
}
