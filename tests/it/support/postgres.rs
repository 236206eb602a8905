//! A throwaway PostgreSQL for tests: `TEST_DATABASE_URL` when set (a fresh database is
//! created in it per use), otherwise a private cluster started with `initdb` + `pg_ctl`
//! on a random loopback port (as the `postgres` OS user when running as root), stopped and
//! deleted on drop.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;

use sqlx::Connection;

/// A database to test against.
pub struct TestPostgres {
    /// URL of the test database.
    pub url: String,
    cluster: Option<Cluster>,
    admin_url: String,
    database: String,
    /// Databases made by [`TestPostgres::another_database`], dropped by `cleanup`.
    others: std::sync::Mutex<Vec<String>>,
}

struct Cluster {
    bin: PathBuf,
    data: PathBuf,
    _dir: tempfile::TempDir,
    as_postgres: bool,
    /// `pg_ctl -o` options (port, socket dir), for restarts on the same port.
    options: String,
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn find_bin_dir() -> Option<PathBuf> {
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if dir.join("initdb").is_file() {
            return Some(dir);
        }
    }
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").is_file())
        .collect();
    candidates.sort();
    if let Some(best) = candidates.pop() {
        return Some(best);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .find(|p| p.join("initdb").is_file() && p.join("pg_ctl").is_file())
    })
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

impl Cluster {
    fn command(&self, program: &str) -> Command {
        let exe = self.bin.join(program);
        if self.as_postgres {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(exe);
            cmd
        } else {
            Command::new(exe)
        }
    }

    fn start() -> Result<(Self, u16), String> {
        let bin = find_bin_dir().ok_or(
            "no PostgreSQL binaries (initdb, pg_ctl) found: install Debian's `postgresql`",
        )?;
        let dir = tempfile::Builder::new()
            .prefix("sextant-pg-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let data = dir.path().join("data");
        let as_postgres = is_root();
        std::fs::create_dir(&data).map_err(|e| e.to_string())?;
        if as_postgres {
            run(Command::new("chown")
                .args(["-R", "postgres:"])
                .arg(dir.path()))?;
        }
        let mut cluster = Self {
            bin,
            data,
            _dir: dir,
            as_postgres,
            options: String::new(),
        };
        run(cluster
            .command("initdb")
            .arg("-D")
            .arg(&cluster.data)
            .args(["-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]))?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off",
            cluster.data.display()
        );
        cluster.options = options;
        cluster.pg_start()?;
        Ok((cluster, port))
    }

    fn pg_start(&self) -> Result<(), String> {
        run(self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(self.data.join("server.log"))
            .args(["-o", &self.options, "-w", "start"]))
    }

    fn pg_stop(&self) -> Result<(), String> {
        run(self.command("pg_ctl").arg("-D").arg(&self.data).args([
            "-m",
            "immediate",
            "-w",
            "stop",
        ]))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let mut out = format!("{}/{database}", &base[..path_start]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

async fn admin(url: &str, sql: &str) -> Result<(), String> {
    let mut conn = sqlx::PgConnection::connect(url)
        .await
        .map_err(|e| format!("connect {url}: {e}"))?;
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(&mut conn)
        .await
        .map_err(|e| format!("{sql}: {e}"))?;
    conn.close().await.map_err(|e| e.to_string())
}

impl TestPostgres {
    /// A fresh database, or `Err` when PostgreSQL's server binaries are not installed.
    /// Any other failure to set one up panics: it is the harness's, never a reason to skip.
    pub async fn start() -> Result<Self, super::Unavailable> {
        let (cluster, admin_url) = match std::env::var("TEST_DATABASE_URL") {
            Ok(url) if !url.is_empty() => (None, url),
            _ => {
                if find_bin_dir().is_none() {
                    return Err(super::Unavailable::missing(
                        "PostgreSQL's server binaries (initdb, pg_ctl)",
                        "apt-get install postgresql",
                        "neither pg_config, /usr/lib/postgresql/*/bin nor PATH has them",
                    ));
                }
                let (cluster, port) = tokio::task::spawn_blocking(Cluster::start)
                    .await
                    .expect("the cluster set-up ran")
                    .unwrap_or_else(|e| panic!("starting a throwaway PostgreSQL cluster: {e}"));
                (
                    Some(cluster),
                    format!("postgres://postgres@127.0.0.1:{port}/postgres"),
                )
            }
        };
        let database = format!("sextant_test_{}", uuid::Uuid::now_v7().simple());
        admin(&admin_url, &format!("CREATE DATABASE {database}"))
            .await
            .unwrap_or_else(|e| panic!("creating the test database: {e}"));
        Ok(Self {
            url: with_database(&admin_url, &database),
            cluster,
            admin_url,
            database,
            others: Default::default(),
        })
    }

    /// The URL of another fresh database on the same server, for a test that needs an
    /// empty one beside this.
    pub async fn another_database(&self) -> String {
        let database = format!("sextant_test_{}", uuid::Uuid::now_v7().simple());
        admin(&self.admin_url, &format!("CREATE DATABASE {database}"))
            .await
            .unwrap_or_else(|e| panic!("creating another test database: {e}"));
        self.others
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(database.clone());
        with_database(&self.admin_url, &database)
    }

    /// Whether this database lives in a private cluster the test may stop and start.
    pub fn can_restart(&self) -> bool {
        self.cluster.is_some()
    }

    /// Stops the private cluster at once (as a crash would).
    pub fn stop(&self) -> Result<(), String> {
        self.cluster
            .as_ref()
            .ok_or("not a private cluster")?
            .pg_stop()
    }

    /// Starts the private cluster again on the same port.
    pub fn restart(&self) -> Result<(), String> {
        self.cluster
            .as_ref()
            .ok_or("not a private cluster")?
            .pg_start()
    }

    /// Drops the test database (a private cluster is deleted whole on drop anyway).
    pub async fn cleanup(self) {
        if self.cluster.is_none() {
            let others =
                std::mem::take(&mut *self.others.lock().unwrap_or_else(|e| e.into_inner()));
            for database in std::iter::once(&self.database).chain(&others) {
                let _ = admin(
                    &self.admin_url,
                    &format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"),
                )
                .await;
            }
        }
    }
}
