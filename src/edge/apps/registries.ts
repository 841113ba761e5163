/**
 * Container registries the edge pulls images from: their addresses and credentials, the password
 * sealed at rest with the data directory's key (`kernel/secret-box.ts`) and never answered back.
 * `REGISTRY_SCHEMAS` describes each kind (`/apps/registries/schemas`); a registry is checked
 * against its kind's schema, so what the schema says (`region.minLength`) is what is enforced.
 */
import { AppError, ERRORS, badRequest, conflict, notFound } from '../../kernel/errors.js';
import { uuidv7 } from '../../kernel/ids.js';
import type { SecretBox } from '../../kernel/secret-box.js';
import type { RegistryRepository, RegistryRow } from './repository.js';
import type { PullAuth } from './service.js';

interface StringProperty {
  type: 'string';
  title: string;
  description: string;
  minLength: number;
  maxLength: number;
  default?: string;
  writeOnly?: boolean;
}

export interface RegistrySchemaEntry {
  type: string;
  name: string;
  description: string;
  schema: {
    type: 'object';
    required: string[];
    properties: {
      url: StringProperty;
      username: StringProperty;
      password: StringProperty;
      region: StringProperty;
    };
  };
}

const prop = (
  title: string,
  description: string,
  minLength: number,
  maxLength: number,
  more: Partial<StringProperty> = {},
): StringProperty => ({
  type: 'string',
  title,
  description,
  minLength,
  maxLength,
  ...more,
});

function entry(
  type: string,
  name: string,
  description: string,
  region: StringProperty,
  url: StringProperty,
  username = prop('User name', 'user name', 0, 200),
): RegistrySchemaEntry {
  const properties = {
    url,
    username,
    password: prop('Password', 'password or access token (stored sealed, never shown)', 0, 8192, {
      writeOnly: true,
    }),
    region,
  };
  const required = Object.entries(properties)
    .filter(([, p]) => p.minLength > 0)
    .map(([k]) => k);
  return { type, name, description, schema: { type: 'object', required, properties } };
}

/** The kinds of registry, each with the JSON schema of its settings. */
export const REGISTRY_SCHEMAS: RegistrySchemaEntry[] = [
  entry(
    'docker',
    'Docker registry',
    'a Docker Registry HTTP API v2: Docker Hub, Harbor, GitLab, Quay or a private registry',
    prop('Region', 'not used by this kind', 0, 64),
    prop('Address', 'registry host, e.g. registry.example.com:5000 or docker.io', 1, 500),
  ),
  entry(
    'ecr',
    'Amazon ECR',
    'Amazon Elastic Container Registry: user AWS, password from `aws ecr get-login-password` (valid 12 hours)',
    prop('Region', 'AWS region of the registry, e.g. eu-central-1', 1, 64),
    prop('Address', '<account>.dkr.ecr.<region>.amazonaws.com', 1, 500),
    prop('User name', 'AWS', 1, 200, { default: 'AWS' }),
  ),
  entry(
    'acr',
    'Azure Container Registry',
    'Azure Container Registry: a service principal or the admin user and its password',
    prop('Region', 'Azure region (informative)', 0, 64),
    prop('Address', '<name>.azurecr.io', 1, 500),
  ),
];

export interface RegistryInput {
  name: string;
  type: string;
  url: string;
  username?: string;
  password?: string;
  region?: string;
}

export interface Registry {
  id: string;
  name: string;
  type: string;
  url: string;
  username: string;
  region: string;
  /** Whether a password is stored (it is never answered). */
  hasPassword: boolean;
  createdAt: string;
  updatedAt: string;
}

const toRegistry = (r: RegistryRow): Registry => ({
  id: r.id,
  name: r.name,
  type: r.type,
  url: r.url,
  username: r.username,
  region: r.region,
  hasPassword: r.password_sealed !== null,
  createdAt: new Date(r.created_at).toISOString(),
  updatedAt: new Date(r.updated_at).toISOString(),
});

export class RegistryService {
  constructor(
    private readonly repo: RegistryRepository,
    private readonly box: SecretBox,
    private readonly max: number,
  ) {}

  async list(): Promise<Registry[]> {
    return (await this.repo.list()).map(toRegistry);
  }

  async get(id: string): Promise<Registry> {
    return toRegistry(await this.row(id));
  }

  async create(input: RegistryInput): Promise<Registry> {
    const values = check(input);
    if ((await this.repo.count()) >= this.max) throw conflict(`at most ${this.max} registries`);
    if (await this.repo.byName(input.name)) throw conflict(`a registry named "${input.name}" exists`);
    const now = Date.now();
    const row: RegistryRow = {
      id: uuidv7(now),
      name: input.name,
      ...values,
      password_sealed: input.password ? this.box.seal(input.password) : null,
      created_at: now,
      updated_at: now,
    };
    await this.repo.insert(row);
    return toRegistry(row);
  }

  /** Replaces a registry's settings; a password left out keeps the stored one (`""` removes it). */
  async update(id: string, input: RegistryInput): Promise<Registry> {
    const current = await this.row(id);
    const values = check(input);
    const other = await this.repo.byName(input.name);
    if (other && other.id !== id) throw conflict(`a registry named "${input.name}" exists`);
    const row: RegistryRow = {
      ...current,
      name: input.name,
      ...values,
      password_sealed:
        input.password === undefined
          ? current.password_sealed
          : input.password
            ? this.box.seal(input.password)
            : null,
      updated_at: Date.now(),
    };
    await this.repo.update(row);
    return toRegistry(row);
  }

  async remove(id: string): Promise<void> {
    if (!(await this.repo.remove(id))) throw notFound(`registry "${id}" not found`);
  }

  /** The credentials of a pull through registry `id`. */
  async pullAuth(id: string): Promise<PullAuth> {
    const r = await this.row(id);
    let password = '';
    try {
      password = r.password_sealed ? this.box.open(r.password_sealed) : '';
    } catch (err) {
      throw new AppError(
        ERRORS.conflict,
        `the password of registry "${r.name}" cannot be unsealed (was the data directory's secrets/credentials.key replaced?): set it again`,
        { cause: err },
      );
    }
    return { username: r.username, password, serveraddress: r.url };
  }

  private async row(id: string): Promise<RegistryRow> {
    const r = await this.repo.get(id);
    if (!r) throw notFound(`registry "${id}" not found`);
    return r;
  }
}

/** The input checked against its kind's schema; answers the stored columns. */
function check(input: RegistryInput): Pick<RegistryRow, 'type' | 'url' | 'username' | 'region'> {
  const kind = REGISTRY_SCHEMAS.find((s) => s.type === input.type);
  if (!kind) {
    throw badRequest(
      `type must be one of ${REGISTRY_SCHEMAS.map((s) => s.type).join(', ')}, got "${input.type}"`,
    );
  }
  const values = {
    url: input.url,
    username: input.username ?? kind.schema.properties.username.default ?? '',
    password: input.password ?? '',
    region: input.region ?? '',
  };
  for (const [key, p] of Object.entries(kind.schema.properties) as [keyof typeof values, StringProperty][]) {
    const v = values[key];
    if (key === 'password' && input.password === undefined) continue;
    if (v.length < p.minLength || v.length > p.maxLength) {
      throw badRequest(
        p.minLength > 0 && v.length === 0
          ? `${key} is required for a registry of type ${kind.type}`
          : `${key} must be ${p.minLength} to ${p.maxLength} characters for a registry of type ${kind.type}`,
      );
    }
  }
  return { type: kind.type, url: values.url, username: values.username, region: values.region };
}
