//! A worker's blocking connection to its coordinator, over either transport:
//! the coordinator's Unix socket, or TCP (`HOST:PORT`) for workers launched
//! through a cluster scheduler.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

/// Where the coordinator listens, as a worker is handed it (the one type
/// for both ends).
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// A Unix socket in a private directory.
    Unix(PathBuf),
    /// `HOST:PORT` of a TCP listener.
    Tcp(String),
}

impl Endpoint {
    /// From the launch environment: [`crate::env::ADDR`] first, then
    /// [`crate::env::SOCKET`]; None when neither is set.
    pub fn from_env() -> Option<Endpoint> {
        match (std::env::var(crate::env::ADDR), std::env::var_os(crate::env::SOCKET)) {
            (Ok(addr), _) => Some(Endpoint::Tcp(addr)),
            (Err(_), Some(path)) => Some(Endpoint::Unix(PathBuf::from(path))),
            (Err(_), None) => None,
        }
    }
}

/// A connected stream; TCP has Nagle's delay switched off, since frames
/// are small and each waits for an answer.
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub fn connect(endpoint: &Endpoint) -> io::Result<Stream> {
        Ok(match endpoint {
            Endpoint::Unix(path) => Stream::Unix(UnixStream::connect(path)?),
            Endpoint::Tcp(addr) => {
                let s = TcpStream::connect(addr.as_str())?;
                s.set_nodelay(true)?;
                Stream::Tcp(s)
            }
        })
    }

    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
        })
    }

    /// Closes the writing half, so the peer reads end of stream.
    pub fn shutdown_write(&self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Write),
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Write),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}
