# Coder template for baton workspaces: one short-lived container per pipeline run.
#
# baton (WORKSPACE_PROVIDER=coder) creates a workspace from this template for each run and passes
# the run as the rich parameters below; the startup script runs `baton agent`, which clones the
# repository, runs the stage prompt with the stage's agent and posts the completion callback. baton
# deletes the workspace after the callback (or after its stale-run sweep).
#
# The parameter names are a contract with baton's Coder provider: keep them exactly as they are.
# The secrets among them (callback_token, gitea_token, claude_oauth_token, the other agents'
# *_api_key) never become the runner's or the agent's environment: the startup script hands them
# to `baton agent` in a 0600 file (BATON_SECRETS_FILE); see "The run's secrets" at coder_agent below.
# kubernetes/main.tf is the same template for a Kubernetes cluster; everything from the variables
# shared by both down to the `coder_app` is identical in the two files (a test keeps it so).

terraform {
  required_providers {
    coder = {
      source  = "coder/coder"
      version = ">= 2.0.0"
    }
    docker = {
      source  = "kreuzwerker/docker"
      version = "~> 3.0"
    }
  }
}

provider "coder" {}
provider "docker" {}

variable "image" {
  description = "Workspace image built from deploy/coder/Dockerfile (Node 20, git, curl, Claude Code, baton)."
  type        = string
  default     = "baton-workspace:latest"
}

variable "baton_npm_spec" {
  description = "Installed with npm when the image has no `baton` command (an npm spec or tarball URL)."
  type        = string
  default     = "baton"
}

variable "agents" {
  description = "The agents' CLIs the pipeline uses, comma-separated (claude, codex, gemini, opencode), e.g. \"claude,codex\": those the image lacks are installed at startup at the versions deploy/coder/Dockerfile pins. Empty: the image's only (the Dockerfile installs all four by default)."
  type        = string
  default     = ""
  validation {
    condition     = alltrue([for cli in split(",", var.agents) : contains(["", "claude", "codex", "gemini", "opencode"], cli)])
    error_message = "agents must name claude, codex, gemini or opencode, separated by commas without spaces."
  }
}

variable "max_run_hours" {
  description = "Backstop: `baton agent` is killed after this many hours (or the run's max_duration_ms plus 15 minutes, whichever is longer) even if baton never tears the workspace down."
  type        = number
  default     = 3
}

variable "install_command" {
  description = "Run before the agent on heavy stages (develop, review-code, rework-pr, test, devops, fix-bug), e.g. \"npm ci\". Empty: none."
  type        = string
  default     = ""
}

variable "build_command" {
  description = "Run after install_command on heavy stages, e.g. \"npm run build\". Empty: none."
  type        = string
  default     = ""
}

variable "memory_mb" {
  description = "Memory limit of the workspace container."
  type        = number
  default     = 4096
}

variable "nested_sandbox" {
  description = "auto (default): `baton agent` runs git, the install and build commands and the agent each in a nested bubblewrap sandbox (BATON_SANDBOX) where they cannot see the runner, its memory (the callback token) or any other process, wherever the container may create user namespaces, and warns in the run's log where it may not; on: the same, and a run fails where it cannot; off: never. Needs bubblewrap in the image (deploy/coder/Dockerfile has it). See deploy/coder/README.md."
  type        = string
  default     = "auto"
  validation {
    condition     = contains(["auto", "on", "off"], var.nested_sandbox)
    error_message = "nested_sandbox must be auto, on or off."
  }
}

data "coder_provisioner" "me" {}
data "coder_workspace" "me" {}
data "coder_workspace_owner" "me" {}

# ---- The run, as sent by baton (rich_parameter_values). None are mutable: a workspace is one run.
#
# A parameter without a default carries no `validation` block: `coder templates push` plans the
# template with no parameter values, and terraform-provider-coder checks a validation regex
# against the empty string then (provider/parameter.go, `Parameter.Valid`: "always apply this
# validation, regardless if the param is set or not"; coder/terraform-provider-coder#144,
# coder/coder#12686), so a regex such as "^https?://" makes every push fail. baton validates
# what it sends, and `baton agent` refuses a malformed CALLBACK_URL or an empty TASK_TYPE.

data "coder_parameter" "task_type" {
  name         = "task_type"
  display_name = "Stage"
  description  = "Pipeline stage to run: analyse, architect, develop, review-code, rework-pr, test, devops, fix-bug, release, maintenance (or a custom stage with a command file)."
  type         = "string"
  mutable      = false
}

data "coder_parameter" "issue_number" {
  name         = "issue_number"
  display_name = "Issue or PR number"
  description  = "Empty for repository-wide stages such as maintenance."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "gitea_url" {
  name         = "gitea_url"
  display_name = "Forge URL"
  description  = "Baton's forge gateway (CALLBACK_URL/gateway), for runs on Gitea, Forgejo, GitHub and GitLab alike: the run reaches its forge only through baton."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "forge" {
  name         = "forge"
  display_name = "Forge"
  description  = "BATON_FORGE: github or gitlab for a run on those forges (the runner then gives the agent the forge gateway's capability in GH_TOKEN and GITHUB_API_URL, or GITLAB_TOKEN and CI_API_V4_URL, beside GITEA_TOKEN); empty for Gitea and Forgejo."
  type         = "string"
  default      = ""
  mutable      = false
  validation {
    regex = "^(github|gitlab)?$"
    error = "github, gitlab or empty"
  }
}

data "coder_parameter" "gitea_org" {
  name         = "gitea_org"
  display_name = "Repository owner"
  type         = "string"
  mutable      = false
}

data "coder_parameter" "gitea_repo" {
  name         = "gitea_repo"
  display_name = "Repository name"
  type         = "string"
  mutable      = false
}

data "coder_parameter" "gitea_token" {
  name         = "gitea_token"
  display_name = "Forge token of the stage's bot account"
  description  = "Secret, handed to the runner in its secrets file. A capability (bgw_…) that only baton's forge gateway accepts, only while the run lives and only for its repository, on every forge. Visible to template admins and the workspace owner in the build parameters: create workspaces as a dedicated baton service account."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "claude_oauth_token" {
  name         = "claude_oauth_token"
  display_name = "Claude Code OAuth token"
  description  = "Secret (from `claude setup-token`), handed to the runner in its secrets file; becomes CLAUDE_CODE_OAUTH_TOKEN of the agent only."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "repo_clone_url" {
  name         = "repo_clone_url"
  display_name = "Clone URL"
  type         = "string"
  mutable      = false
}

data "coder_parameter" "callback_url" {
  name         = "callback_url"
  display_name = "Completion callback URL"
  description  = "Full URL, e.g. https://baton.example.com/api/runs/42/complete; progress goes to …/progress."
  type         = "string"
  mutable      = false
}

data "coder_parameter" "callback_token" {
  name         = "callback_token"
  display_name = "Callback token"
  description  = "Secret of this run, handed to the runner in its secrets file and never to the agent; baton stores only its hash."
  type         = "string"
  mutable      = false
}

# Whose the workspace is: baton reads it back before it adopts a workspace of a run's name, so a
# run whose database was restored from a backup never takes over another run's live workspace.
# Nothing in the workspace uses it. Optional, so a workspace created by an older baton still starts.
data "coder_parameter" "callback_token_hash" {
  name         = "callback_token_hash"
  display_name = "Callback token hash"
  description  = "SHA-256 of this run's callback token (never the token): which run attempt the workspace was made for."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "deploy_env" {
  name         = "deploy_env"
  display_name = "Deployment environment"
  description  = "For the devops stage, e.g. staging."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "run_id" {
  name         = "run_id"
  display_name = "baton run id"
  type         = "string"
  mutable      = false
}

# ---- The run's limits, as the local provider passes them. Optional, so a workspace created by an
# older baton still starts; empty means the runner's own default.

data "coder_parameter" "max_duration_ms" {
  name         = "max_duration_ms"
  display_name = "Longest run (ms)"
  description  = "BATON_MAX_DURATION_MS of `baton agent`: the agent is stopped and the run fails after this long. Empty: 90 minutes."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "token_cap" {
  name         = "token_cap"
  display_name = "Token cap"
  description  = "BATON_TOKEN_CAP of `baton agent`: the agent is stopped once it used this many tokens. Empty or 0: no cap."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "stage_build" {
  name         = "stage_build"
  display_name = "Stage build"
  description  = "heavy: install_command and build_command run before the agent; light: they do not. Empty: the built-in stage table decides."
  type         = "string"
  default      = ""
  mutable      = false
}

# ---- The stage's settings from baton's stage table, as the local provider passes them. Optional
# like the limits; their patterns accept the empty value, so the import's plan passes them.

data "coder_parameter" "setup_tokens" {
  name         = "setup_tokens"
  display_name = "Tokens of the install and build commands"
  description  = "BATON_SETUP_TOKENS of `baton agent`: forge (the bot account's token) and/or agent (the Claude token), comma-separated; the stage table's setupTokens. Empty: none, those commands run the repository's code."
  type         = "string"
  default      = ""
  mutable      = false
  validation {
    regex = "^((forge|agent)(,(forge|agent))*)?$"
    error = "forge, agent or both, comma-separated, or empty"
  }
}

data "coder_parameter" "stage_skip_permissions" {
  name         = "stage_skip_permissions"
  display_name = "Skip permissions without allowed-tools"
  description  = "BATON_STAGE_SKIP_PERMISSIONS of `baton agent`: whether a stage whose command file has no allowed-tools runs Claude Code with --dangerously-skip-permissions; the stage table's skipPermissions. Empty: true."
  type         = "string"
  default      = ""
  mutable      = false
  validation {
    regex = "^(true|false)?$"
    error = "true, false or empty"
  }
}

# ---- A manual run's details (POST /api/runs, baton run). Optional: a run from a webhook sends neither.

data "coder_parameter" "stage_arguments" {
  name         = "stage_arguments"
  display_name = "Stage arguments"
  description  = "BATON_ARGUMENTS of `baton agent`: what $ARGUMENTS stands for in the stage's prompt. Empty: the issue number."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "git_ref" {
  name         = "git_ref"
  display_name = "Branch"
  description  = "BATON_BRANCH of `baton agent`: the branch the run works on. Empty: develop, else the default branch."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "resume_session_id" {
  name         = "resume_session_id"
  display_name = "Resumed session"
  description  = "BATON_RESUME_SESSION_ID of `baton agent`: the agent session a reply resumes (a conversation's next turn). Empty: a first turn."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "resume_reply" {
  name         = "resume_reply"
  display_name = "Reply"
  description  = "BATON_RESUME_REPLY of `baton agent`: the reply that resumes the session, its prompt."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "resume_by" {
  name         = "resume_by"
  display_name = "Reply by"
  description  = "BATON_RESUME_BY of `baton agent`: who replied."
  type         = "string"
  default      = ""
  mutable      = false
}

# ---- The stage's agent (pipeline.stages.<stage>.agent, agents.<agent> in baton.yaml). Empty:
# Claude Code with its own model, as in templates from before these.

data "coder_parameter" "agent" {
  name         = "agent"
  display_name = "Agent"
  description  = "BATON_AGENT of `baton agent`: claude, codex, gemini, opencode or text. Its CLI must be in the image or named in the template's `agents` variable."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "agent_model" {
  name         = "agent_model"
  display_name = "Agent model"
  description  = "BATON_AGENT_MODEL of `baton agent`; empty: the CLI's default."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "agent_command" {
  name         = "agent_command"
  display_name = "Agent command"
  description  = "BATON_AGENT_COMMAND of `baton agent` (agents.<agent>.command, a JSON array); empty: the adapter's executable."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "agent_price" {
  name         = "agent_price"
  display_name = "Agent price"
  description  = "BATON_AGENT_PRICE of `baton agent`: USD per million tokens (JSON) of the stage's model: the cost of an agent whose CLI reports none, and the check of one that does."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "codex_api_key" {
  name         = "codex_api_key"
  display_name = "OpenAI API key for Codex CLI"
  description  = "Secret, sent only for a Codex run and handed to the runner in its secrets file; becomes CODEX_API_KEY of the agent only."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "gemini_api_key" {
  name         = "gemini_api_key"
  display_name = "Gemini API key for Gemini CLI"
  description  = "Secret, sent only for a Gemini CLI run and handed to the runner in its secrets file; becomes GEMINI_API_KEY of the agent only."
  type         = "string"
  default      = ""
  mutable      = false
}

data "coder_parameter" "opencode_api_key" {
  name         = "opencode_api_key"
  display_name = "API key for OpenCode's provider"
  description  = "Secret, sent only for an OpenCode run and handed to the runner in its secrets file; becomes the key of OpenCode's provider for the agent only."
  type         = "string"
  default      = ""
  mutable      = false
}

locals {
  workdir  = "/home/coder/work"
  log_port = 13338
}

resource "coder_agent" "main" {
  arch = data.coder_provisioner.me.arch
  os   = "linux"
  dir  = local.workdir

  # The env contract of `baton agent` (see `baton agent --help`), without its secrets.
  #
  # The run's secrets (CALLBACK_TOKEN, GITEA_TOKEN, the agent's key) are not in this map
  # under their own names: the Coder agent gives this map to every process it starts (the
  # startup script, the metadata scripts below, SSH sessions), so as CALLBACK_TOKEN the agent
  # would inherit the token that reports the run. `baton agent` takes them from a 0600 file
  # instead (BATON_SECRETS_FILE: NAME=value lines, read once and deleted).
  #
  # Why they still travel through this map, under BATON_HANDOFF_* names, and not through the
  # startup script: Terraform renders `${...}` in a template string as the bare value, without
  # quoting, and the Coder agent runs the script as `<shell> -c <script>` (agent/agentssh,
  # Server.CreateCommand) and logs its text (agent/agentscripts, "running agent script"). A
  # parameter inside the script would be shell code (a quote, a line break or `$(...)` in it
  # would run), and it would sit in the script's command line (/proc/<pid>/cmdline, readable by
  # every user) and in the agent's log. An env entry reaches the script as an environment
  # variable, byte for byte, parsed by no shell. The BATON_HANDOFF_* names are read by no
  # program (not by `baton agent`, not by Claude Code, not by git or tea); the startup script
  # moves their values into the runner's secrets file and unsets them before it starts the
  # runner. No parameter is written into any script of this template (a test keeps it so).
  env = {
    TASK_TYPE                             = data.coder_parameter.task_type.value
    ISSUE_NUMBER                          = data.coder_parameter.issue_number.value
    GITEA_URL                             = data.coder_parameter.gitea_url.value
    BATON_FORGE                           = data.coder_parameter.forge.value
    GITEA_ORG                             = data.coder_parameter.gitea_org.value
    GITEA_REPO                            = data.coder_parameter.gitea_repo.value
    REPO_CLONE_URL                        = data.coder_parameter.repo_clone_url.value
    CALLBACK_URL                          = data.coder_parameter.callback_url.value
    DEPLOY_ENV                            = data.coder_parameter.deploy_env.value
    BATON_RUN_ID                          = data.coder_parameter.run_id.value
    BATON_WORKDIR                         = local.workdir
    BATON_AGENT_LOG_PORT                  = tostring(local.log_port)
    BATON_INSTALL_COMMAND                 = var.install_command
    BATON_BUILD_COMMAND                   = var.build_command
    BATON_MAX_DURATION_MS                 = data.coder_parameter.max_duration_ms.value
    BATON_TOKEN_CAP                       = data.coder_parameter.token_cap.value
    BATON_STAGE_BUILD                     = data.coder_parameter.stage_build.value
    BATON_SETUP_TOKENS                    = data.coder_parameter.setup_tokens.value
    BATON_STAGE_SKIP_PERMISSIONS          = data.coder_parameter.stage_skip_permissions.value
    BATON_ARGUMENTS                       = data.coder_parameter.stage_arguments.value
    BATON_BRANCH                          = data.coder_parameter.git_ref.value
    BATON_RESUME_SESSION_ID               = data.coder_parameter.resume_session_id.value
    BATON_RESUME_REPLY                    = data.coder_parameter.resume_reply.value
    BATON_RESUME_BY                       = data.coder_parameter.resume_by.value
    BATON_AGENT                           = data.coder_parameter.agent.value
    BATON_AGENT_MODEL                     = data.coder_parameter.agent_model.value
    BATON_AGENT_COMMAND                   = data.coder_parameter.agent_command.value
    BATON_AGENT_PRICE                     = data.coder_parameter.agent_price.value
    BATON_SANDBOX                         = var.nested_sandbox == "on" ? "bwrap" : (var.nested_sandbox == "auto" ? "auto" : "")
    BATON_HANDOFF_CALLBACK_TOKEN          = data.coder_parameter.callback_token.value
    BATON_HANDOFF_GITEA_TOKEN             = data.coder_parameter.gitea_token.value
    BATON_HANDOFF_CLAUDE_CODE_OAUTH_TOKEN = data.coder_parameter.claude_oauth_token.value
    BATON_HANDOFF_CODEX_API_KEY           = data.coder_parameter.codex_api_key.value
    BATON_HANDOFF_GEMINI_API_KEY          = data.coder_parameter.gemini_api_key.value
    BATON_HANDOFF_OPENCODE_API_KEY        = data.coder_parameter.opencode_api_key.value
  }

  # The script starts the runner in the background and exits: the workspace counts as started
  # while the agent works, and baton learns the outcome from the callback, not from this script.
  # .baton/runner.exit records the runner's exit code for the status shown in Coder. It reads
  # the run only from its environment: no parameter is rendered into it.
  startup_script = <<-EOT
    set -eu
    state="${local.workdir}/.baton"
    mkdir -p "$state"
    if [ -e "$state/runner.out" ]; then
      echo "baton agent already ran in this workspace; a workspace is one run, not starting it again"
      exit 0
    fi

    # The run's secrets go from the BATON_HANDOFF_* variables into a file only this user can
    # read (mktemp creates it 0600, here under umask 077 too), outside the checkout, as the
    # NAME=value lines `baton agent` reads from BATON_SECRETS_FILE and deletes at once. A value
    # is only ever expanded inside double quotes and written by the printf builtin with '%s':
    # nothing in it is run, split or globbed, and it is on no command line. A line break would
    # end a value early and could forge another line, so such a value stops the start, naming
    # the parameter and never the value. First thing, so that nothing below (npm install runs
    # package scripts) inherits a secret.
    cr=$(printf '\r')
    nl=$(printf '\nx'); nl=$${nl%x}
    umask_before=$(umask)
    umask 077
    secrets=$(mktemp "$${TMPDIR:-/tmp}/baton-secrets.XXXXXXXX")
    umask "$umask_before"
    trap 'rm -f "$secrets"' EXIT
    put_secret() {
      case "$3" in
        *"$nl"* | *"$cr"*)
          echo "the $2 parameter has a line break, which the runner's secrets file cannot hold; not starting baton agent" >&2
          exit 1 ;;
      esac
      if [ -n "$3" ]; then printf '%s=%s\n' "$1" "$3" >> "$secrets"; fi
    }
    put_secret CALLBACK_TOKEN callback_token "$${BATON_HANDOFF_CALLBACK_TOKEN:-}"
    put_secret GITEA_TOKEN gitea_token "$${BATON_HANDOFF_GITEA_TOKEN:-}"
    put_secret CLAUDE_CODE_OAUTH_TOKEN claude_oauth_token "$${BATON_HANDOFF_CLAUDE_CODE_OAUTH_TOKEN:-}"
    put_secret CODEX_API_KEY codex_api_key "$${BATON_HANDOFF_CODEX_API_KEY:-}"
    put_secret GEMINI_API_KEY gemini_api_key "$${BATON_HANDOFF_GEMINI_API_KEY:-}"
    put_secret OPENCODE_API_KEY opencode_api_key "$${BATON_HANDOFF_OPENCODE_API_KEY:-}"
    # Nothing started from here on inherits them, nor the Coder agent's own token (which it puts
    # into every script's environment: agent/agent.go, updateCommandEnv), with which any process
    # could fetch the agent's manifest from Coder, these secrets included.
    unset BATON_HANDOFF_CALLBACK_TOKEN BATON_HANDOFF_GITEA_TOKEN BATON_HANDOFF_CLAUDE_CODE_OAUTH_TOKEN \
      BATON_HANDOFF_CODEX_API_KEY BATON_HANDOFF_GEMINI_API_KEY BATON_HANDOFF_OPENCODE_API_KEY CODER_AGENT_TOKEN

    if ! command -v baton >/dev/null 2>&1; then
      echo "baton is not in the image; installing ${var.baton_npm_spec}"
      npm install --global --prefix "$HOME/.local" "${var.baton_npm_spec}"
      export PATH="$HOME/.local/bin:$PATH"
    fi
    # The agents' CLIs named in the `agents` variable that the image lacks, at the versions
    # deploy/coder/Dockerfile pins (a test keeps the two alike). The variable's validation lets
    # only these names and commas through.
    for cli in $(echo "${var.agents}" | tr ',' ' '); do
      case "$cli" in
        claude) package="@anthropic-ai/claude-code@2.1.197" ;;
        codex) package="@openai/codex@0.171.0" ;;
        gemini) package="@google/gemini-cli@0.61.0" ;;
        opencode) package="opencode-ai@1.18.33" ;;
        *) continue ;;
      esac
      if ! command -v "$cli" >/dev/null 2>&1; then
        echo "$cli is not in the image; installing $package"
        npm install --global --prefix "$HOME/.local" "$package"
        export PATH="$HOME/.local/bin:$PATH"
      fi
    done
    # `timeout` is the backstop should baton never tear this workspace down: SIGTERM makes the
    # runner stop the agent and still report the run as failed; SIGKILL a minute later. It gives
    # the run its own limit plus 15 minutes, and never less than max_run_hours.
    backstop=$(( ${var.max_run_hours} * 3600 ))
    case "$${BATON_MAX_DURATION_MS:-}" in
      '' | *[!0-9]*) ;;
      *) limit=$(( BATON_MAX_DURATION_MS / 1000 + 900 )); [ "$limit" -gt "$backstop" ] && backstop=$limit ;;
    esac
    # From here the file is the runner's to read and delete; until here a failed start removes it.
    trap - EXIT
    BATON_SECRETS_FILE="$secrets" nohup sh -c 'timeout --kill-after=60s "$1" baton agent; echo $? > "$2"' runner "$${backstop}s" "$state/runner.exit" \
      > "$state/runner.out" 2>&1 &
    echo "baton agent started for run $${BATON_RUN_ID:-?} ($${TASK_TYPE:-?}); log on port ${local.log_port}"
  EOT

  metadata {
    display_name = "Stage"
    key          = "stage"
    script       = "echo \"$TASK_TYPE #$ISSUE_NUMBER\""
    interval     = 3600
    timeout      = 1
  }

  # running, with the number of log lines so far; then complete (or failed, with the exit code).
  metadata {
    display_name = "Run"
    key          = "run"
    script       = <<-EOT
      state="${local.workdir}/.baton"
      lines=$(cat "$state/agent.log" 2>/dev/null | wc -l)
      if [ -s "$state/runner.exit" ]; then
        code=$(cat "$state/runner.exit")
        if [ "$code" = 0 ]; then echo "complete, $lines log lines"; else echo "failed (exit $code), $lines log lines"; fi
      elif [ -e "$state/runner.out" ]; then
        echo "running, $lines log lines"
      else
        echo "starting"
      fi
    EOT
    interval     = 10
    timeout      = 5
  }
}

# The live log page served by `baton agent` (auto-refreshing HTML, plus /log.txt).
resource "coder_app" "task_log" {
  agent_id     = coder_agent.main.id
  slug         = "task-log"
  display_name = "Task log"
  icon         = "/icon/terminal.svg"
  url          = "http://127.0.0.1:${local.log_port}/"
  subdomain    = false
  share        = "owner"

  healthcheck {
    url       = "http://127.0.0.1:${local.log_port}/log.txt"
    interval  = 10
    threshold = 30
  }
}

# What the workspace can reach: Docker has no per-container egress rules, so the container reaches
# whatever the Docker host's network reaches (docs/coder.md, "What a workspace can reach"). It
# needs baton (CALLBACK_URL: callbacks, and the run's forge, whichever it is, through baton's forge
# gateway), Coder and the agent's API; firewall the rest on the host (DOCKER-USER chain) rather
# than opening the forge or the host's services to it.
resource "docker_container" "workspace" {
  count    = data.coder_workspace.me.start_count
  image    = var.image
  name     = "coder-${data.coder_workspace_owner.me.name}-${lower(data.coder_workspace.me.name)}"
  hostname = data.coder_workspace.me.name
  memory   = var.memory_mb
  # The agent connects back to Coder; inside the container "localhost" is not the Coder server.
  entrypoint = ["sh", "-c", replace(coder_agent.main.init_script, "/localhost|127\\.0\\.0\\.1/", "host.docker.internal")]
  env        = ["CODER_AGENT_TOKEN=${coder_agent.main.token}"]

  host {
    host = "host.docker.internal"
    ip   = "host-gateway"
  }

  labels {
    label = "coder.owner"
    value = data.coder_workspace_owner.me.name
  }
  labels {
    label = "coder.workspace_id"
    value = data.coder_workspace.me.id
  }
  labels {
    label = "baton.run_id"
    value = data.coder_parameter.run_id.value
  }
}

# What the workspace page shows about its container: which run it is.
resource "coder_metadata" "run" {
  count       = data.coder_workspace.me.start_count
  resource_id = docker_container.workspace[0].id

  item {
    key   = "stage"
    value = data.coder_parameter.task_type.value
  }
  item {
    key   = "repository"
    value = "${data.coder_parameter.gitea_org.value}/${data.coder_parameter.gitea_repo.value}"
  }
  item {
    key   = "issue or PR"
    value = data.coder_parameter.issue_number.value
  }
  item {
    key   = "baton run"
    value = data.coder_parameter.run_id.value
  }
}
