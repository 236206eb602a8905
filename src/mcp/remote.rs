//! `sextant --server URL mcp`: a stdio MCP server that relays every tool listing and
//! call to a remote Sextant's `/mcp` (streamable HTTP, with the token), so a local agent
//! that only speaks stdio can use a shared server. Nothing is answered locally.

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};

/// The relay: the remote server's identity and tools, served locally.
pub struct RemoteMcp {
    peer: Peer<RoleClient>,
    info: ServerConfig,
}

/// Connects to the MCP endpoint at `url` (`http://host:7878/mcp`) with an optional bearer
/// token; returns the relay and the client session (keep it alive while relaying).
pub async fn connect(
    url: &str,
    token: Option<String>,
) -> Result<(RemoteMcp, RunningService<RoleClient, ()>), String> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string());
    if let Some(token) = token {
        config = config.auth_header(token);
    }
    let client =
        ().serve(StreamableHttpClientTransport::from_config(config))
            .await
            .map_err(|e| {
                format!("cannot open an MCP session with {url}: {e} (check --server and --token)")
            })?;
    let peer = client
        .peer_info()
        .ok_or_else(|| format!("{url} did not say who it is"))?;
    let mut info = ServerConfig::new(peer.capabilities.clone());
    if let Some(server) = &peer.server_info {
        info = info.with_server_info(server.clone());
    }
    if let Some(instructions) = &peer.instructions {
        info = info.with_instructions(instructions.clone());
    }
    let relay = RemoteMcp {
        peer: client.peer().clone(),
        info,
    };
    Ok((relay, client))
}

fn relayed(e: impl std::fmt::Display) -> McpError {
    McpError::internal_error(format!("the remote Sextant server failed: {e}"), None)
}

impl ServerHandler for RemoteMcp {
    fn get_info(&self) -> ServerConfig {
        self.info.clone()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.peer.list_tools(request).await.map_err(relayed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.peer.call_tool_once(request).await.map_err(relayed)
    }
}
