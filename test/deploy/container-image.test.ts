import fs from 'node:fs';
import path from 'node:path';
import { Copy, DockerfileParser, type Instruction } from 'dockerfile-ast';
import YAML from 'yaml';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/child.js';

/**
 * The Dockerfile and compose.yaml, checked offline: no container engine runs on these machines
 * (building the image for real is a manual step, see deploy/kubernetes/README.md). The Dockerfile is
 * parsed with dockerfile-ast (the parser of the VS Code Docker extension), compose.yaml with yaml.
 */
const dockerfile = DockerfileParser.parse(fs.readFileSync(path.join(REPO_ROOT, 'Dockerfile'), 'utf8'));
const dockerignore = fs.readFileSync(path.join(REPO_ROOT, '.dockerignore'), 'utf8').split('\n');

interface Stage {
  name: string | undefined;
  instructions: Instruction[];
}
const stages: Stage[] = [];
for (const instruction of dockerfile.getInstructions()) {
  if (instruction.getKeyword() === 'FROM') {
    stages.push({ name: /\bAS\s+(\S+)/i.exec(instruction.getArgumentsContent() ?? '')?.[1], instructions: [] });
  } else stages.at(-1)?.instructions.push(instruction);
}
const runtime = stages.at(-1) as Stage;
const args = (i: Instruction) => (i.getArgumentsContent() ?? '').replace(/\\\n/g, ' ').replace(/\s+/g, ' ');
const all = (stage: Stage, keyword: string) => stage.instructions.filter((i) => i.getKeyword() === keyword);
const stage = (name: string) => stages.find((s) => s.name === name);
/** COPY --from=<stage> <source…> <target>, as [stage, sources, target]. */
const copies = (s: Stage) =>
  all(s, 'COPY').map((i) => {
    const paths = args(i).split(' ');
    return { from: i instanceof Copy ? i.getFromFlag()?.getValue() : undefined, sources: paths.slice(0, -1), target: paths.at(-1) };
  });

describe('Dockerfile', () => {
  it('builds in stages and runs from a slim runtime stage', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(runtime.name).toBe('runtime');
  });

  it('installs only production dependencies into the image', () => {
    const modules = copies(runtime).find((c) => c.target === './node_modules' || c.target?.endsWith('/node_modules'));
    expect(modules?.from, 'node_modules are copied from a stage').toBeDefined();
    const source = stage(modules?.from ?? '') as Stage;
    const installs = all(source, 'RUN')
      .map(args)
      .filter((a) => /\bnpm (ci|install)\b/.test(a));
    expect(installs).toHaveLength(1);
    expect(installs[0]).toMatch(/\bnpm ci --omit=dev\b/);
    // Nothing else brings packages in: the runtime stage installs none itself, and what it copies
    // from the build stage is compiled output only.
    expect(
      all(runtime, 'RUN')
        .map(args)
        .filter((a) => /\bnpm (ci|install|i)\b/.test(a)),
    ).toEqual([]);
    const fromBuild = copies(runtime).filter((c) => c.from && c.from !== modules?.from);
    expect(fromBuild.flatMap((c) => c.sources)).toEqual(['/src/dist']);
    expect(
      copies(runtime)
        .filter((c) => !c.from)
        .flatMap((c) => c.sources),
    ).toEqual(['package.json', 'bin', 'assets']);
  });

  it('runs as a non-root user under an init process', () => {
    const users = all(runtime, 'USER').map(args);
    expect(users).toHaveLength(1);
    expect(users[0]).not.toMatch(/^(root|0)(:|$)/);
    const entrypoint = JSON.parse(args(all(runtime, 'ENTRYPOINT')[0] as Instruction)) as string[];
    expect(entrypoint.slice(0, 2)).toEqual(['/usr/bin/tini', '--']);
    expect(entrypoint.slice(2)).toEqual(['node', '/app/bin/baton.js']);
    expect(all(runtime, 'RUN').map(args).join(' ')).toMatch(/apt-get install [^&]*\btini\b/);
  });

  it('checks /health, keeps its data in the /data volume and has git for local workspaces', () => {
    expect(args(all(runtime, 'HEALTHCHECK')[0] as Instruction)).toMatch(/CMD .*\/health/);
    expect(all(runtime, 'VOLUME').map(args)).toEqual(['/data']);
    const env = all(runtime, 'ENV').map(args).join(' ');
    expect(env).toMatch(/\bBATON_DATA_DIR=\/data\b/);
    expect(env).toMatch(/\bDATABASE_URL=sqlite:\/data\//);
    expect(all(runtime, 'RUN').map(args).join(' ')).toMatch(/apt-get install [^&]*\bgit\b/);
  });

  it('keeps local state and secrets out of the build context', () => {
    for (const entry of ['node_modules', 'data', '.env', '*.db', '.git']) expect(dockerignore).toContain(entry);
  });
});

describe('compose.yaml', () => {
  interface Service {
    build?: string;
    image?: string;
    environment?: Record<string, string>;
    env_file?: { path: string; required: boolean }[];
    depends_on?: Record<string, { condition: string }>;
    volumes?: string[];
    healthcheck?: { test: string[] };
    read_only?: boolean;
  }
  const compose = YAML.parse(fs.readFileSync(path.join(REPO_ROOT, 'compose.yaml'), 'utf8')) as {
    services: Record<string, Service>;
    volumes: Record<string, unknown>;
  };
  const { baton, postgres } = compose.services;

  it('runs baton from this Dockerfile on PostgreSQL, once the database is healthy', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['baton', 'postgres']);
    expect(baton?.build).toBe('.');
    expect(baton?.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(postgres?.healthcheck?.test.join(' ')).toMatch(/pg_isready/);
    // Compose fills in ${…} from .env; the URL around it is what is checked here.
    const url = new URL((baton?.environment?.DATABASE_URL ?? '').replace(/\$\{[^}]+\}/g, 'password'));
    expect([url.protocol, url.hostname, url.port, url.pathname]).toEqual(['postgres:', 'postgres', '5432', '/baton']);
  });

  it('says what is true of the container: the first token file, HTTPS for the dashboard, the settings it needs', () => {
    const text = fs.readFileSync(path.join(REPO_ROOT, 'compose.yaml'), 'utf8');
    expect(text).toContain('/data/first-admin-token');
    expect(text).not.toMatch(/token is printed/i);
    expect(text).toContain('X-Forwarded-Proto: https');
    expect(text).toContain('allowInsecureHttp');
    expect(text).toContain('WORKSPACE_PROVIDER=coder');
    for (const example of ['deploy/proxy/Caddyfile', 'deploy/proxy/nginx.conf']) {
      expect(text).toContain(example);
      expect(fs.existsSync(path.join(REPO_ROOT, example)), example).toBe(true);
    }
  });

  it('keeps baton’s data and the database in named volumes', () => {
    expect(baton?.volumes).toContain('baton-data:/data');
    expect(postgres?.volumes).toContain('postgres-data:/var/lib/postgresql/data');
    expect(Object.keys(compose.volumes).sort()).toEqual(['baton-data', 'postgres-data']);
    expect(baton?.read_only).toBe(true);
  });

  it('holds no secret: the password is required from .env, baton’s settings come from baton.env', () => {
    expect(postgres?.environment?.POSTGRES_PASSWORD).toMatch(/^\$\{POSTGRES_PASSWORD:\?[^}]+\}$/);
    expect(baton?.environment?.DATABASE_URL).toContain('${POSTGRES_PASSWORD:?');
    // Required: the image's defaults (local provider, no agent CLI) cannot run a stage.
    expect(baton?.env_file).toEqual([{ path: './baton.env', required: true }]);
    const gitignore = fs.readFileSync(path.join(REPO_ROOT, '.gitignore'), 'utf8').split('\n');
    expect(gitignore).toEqual(expect.arrayContaining(['.env', 'baton.env']));
  });
});
