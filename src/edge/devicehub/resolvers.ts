/** Thin translation between `/devicehub/v2` and the DeviceHub's services. */
import { GraphQLScalarType, valueFromASTUntyped } from 'graphql';
import type { IResolvers } from 'mercurius';
import { badRequest } from '../../kernel/errors.js';
import type { GraphqlContext } from '../../kernel/graphql.js';
import { readUploadedFile } from '../../kernel/graphql/upload.js';
import { findProperty, type DriverDef, type ListValue, type PropertyDef } from './catalogue/index.js';
import type { BrowseService, FoldersSelection } from './browse.js';
import type { DataHub } from '../datahub/index.js';
import type { DeviceHubService } from './service.js';
import { writeTag, type WriteTagRequest } from './write.js';
import { tagValuesFeed, type TagValuesRequest } from './live.js';
import type {
  CreateDeviceRequest,
  CreateRegisterRequest,
  ListRegistersRequest,
  UpdateDeviceRequest,
  UpdateRegisterRequest,
} from './types.js';

export interface DevicehubContext {
  devicehub: DeviceHubService;
  browse: BrowseService;
  /** Largest CSV accepted by UploadCsv, bytes (`--devicehub-csv-max-bytes`). */
  csvMaxBytes: number;
  /** The DataHub, for WriteTag (absent: WriteTag is refused). */
  hub?: DataHub;
}

type Ctx = GraphqlContext & DevicehubContext;

/** Largest CSV accepted by UploadCsv, by default (`--devicehub-csv-max-bytes`). */
export const MAX_CSV_BYTES = 64 * 1024 * 1024;

const JSONScalar = new GraphQLScalarType({
  name: 'JSON',
  serialize: (v) => v,
  parseValue: (v) => v,
  parseLiteral: (ast, variables) => valueFromASTUntyped(ast, variables),
});

/**
 * The file of a GraphQL multipart request: graphql-upload-minimal (through acceptGraphqlUploads) puts
 * an upload object in the variable; its `promise` gives `{ filename, createReadStream }`.
 */
const UploadScalar = new GraphQLScalarType({
  name: 'Upload',
  serialize: () => {
    throw new Error('Upload is an input-only scalar');
  },
  parseValue: (v) => {
    const upload = v as { promise?: Promise<unknown> } | null;
    if (!upload || typeof upload !== 'object' || !upload.promise) {
      throw badRequest(
        'File must be a file part of a GraphQL multipart request (Content-Type: multipart/form-data)',
      );
    }
    return upload.promise;
  },
  parseLiteral: () => {
    throw badRequest('File must be a file part of a GraphQL multipart request, not a literal');
  },
});

/** The uploaded CSV, whole: one over the limit or cut off on the way is refused, nothing stored. */
async function readUpload(file: unknown, maxBytes: number): Promise<string> {
  return (await readUploadedFile(file, maxBytes, 'the CSV file')).toString('utf8');
}

const listValues = (v: ListValue[] | undefined) => (v ?? []).map((x) => ({ Value: x.value, Label: x.label }));

function propertyView(p: PropertyDef) {
  return {
    Name: p.name,
    Label: p.label,
    Description: p.description,
    ValueType: p.type,
    Required: p.required,
    Default: p.default ?? null,
    Min: p.min ?? null,
    Max: p.max ?? null,
    ListValues: listValues(p.listValues),
    TableColumns: (p.columns ?? []).map((c) => ({
      Name: c.name,
      Label: c.label,
      ValueType: c.valueType,
      ReadOnly: c.readOnly,
      AllowEmpty: c.allowEmpty,
      ListValues: listValues(c.listValues),
    })),
  };
}

const owner = (ctx: Ctx) => ctx.auth?.subject ?? 'anonymous';

export const resolvers: IResolvers<never, Ctx> = {
  JSON: JSONScalar,
  Upload: UploadScalar,
  Driver: {
    ID: (d: DriverDef) => d.id,
    Name: (d: DriverDef) => d.name,
    Protocol: (d: DriverDef) => d.protocol,
    Description: (d: DriverDef) => d.description,
    Pollable: (d: DriverDef) => d.pollable,
    Acquiring: (d: DriverDef, _a: unknown, ctx: Ctx) => ctx.devicehub.acquires(d),
    Browsable: (d: DriverDef) => d.browsable,
    Properties: (d: DriverDef) => d.properties.map(propertyView),
    Registers: (d: DriverDef) =>
      d.registers.map((r) => ({
        Name: r.name,
        Description: r.description,
        AddressMin: r.addressMin ?? null,
        AddressMax: r.addressMax ?? null,
        ValueTypes: r.valueTypes,
        Properties: r.properties.map(propertyView),
      })),
    ListValues: (d: DriverDef, args: { Property: string; Register?: string | null }) =>
      listValues(findProperty(d, args.Property, args.Register).listValues),
  },
  Query: {
    ListDrivers: (_r, args, ctx) => ctx.devicehub.listDrivers(args.input),
    GetDriver: (_r, args: { ID: string }, ctx) => {
      try {
        return ctx.devicehub.getDriver(args.ID);
      } catch {
        return null;
      }
    },
    ListDevices: (_r, args, ctx) => ctx.devicehub.listDevices(args.input),
    GetDevice: (_r, args: { ID: string }, ctx) => ctx.devicehub.getDevice(args.ID),
    GetRegister: (_r, args: { ID: string }, ctx) => ctx.devicehub.getRegister(args.ID),
    ListRegisters: (_r, args: { input: ListRegistersRequest }, ctx) =>
      ctx.devicehub.listRegisters(args.input, false),
    ListRegistersFromAllDevices: (_r, args: { input?: ListRegistersRequest | null }, ctx) =>
      ctx.devicehub.listRegisters({ ...(args.input ?? {}), DeviceID: null }, true),
    GetTagStatus: (_r, args: { IDs: string[] }, ctx) => ctx.devicehub.tagStatus(args.IDs),
    ExportCsv: (_r, args: { DeviceIDs?: string[] | null }, ctx) => ctx.devicehub.exportCsv(args.DeviceIDs),
    GetBrowseTask: (_r, args: { ID: string }, ctx) => ctx.browse.getTask(args.ID),
    ListBrowseTaskItems: (_r, args, ctx) => ctx.browse.listItems(args.input),
    GetCart: (_r, _args, ctx) => ctx.browse.cart(owner(ctx)),
  },
  Mutation: {
    CreateDevice: (_r, args: { input: CreateDeviceRequest }, ctx) => ctx.devicehub.createDevice(args.input),
    UpdateDevice: (_r, args: { input: UpdateDeviceRequest }, ctx) => ctx.devicehub.updateDevice(args.input),
    DeleteDevices: (_r, args: { IDs: string[] }, ctx) => ctx.devicehub.deleteDevices(args.IDs),
    CreateRegister: (_r, args: { input: CreateRegisterRequest }, ctx) =>
      ctx.devicehub.createRegister(args.input),
    CreateRegisters: (_r, args: { input: CreateRegisterRequest[] }, ctx) =>
      ctx.devicehub.createRegisters(args.input),
    UpdateRegister: (_r, args: { input: UpdateRegisterRequest }, ctx) =>
      ctx.devicehub.updateRegister(args.input),
    DeleteRegisters: (_r, args: { IDs: string[] }, ctx) => ctx.devicehub.deleteRegisters(args.IDs),
    UploadCsv: async (_r, args: { File: unknown }, ctx) =>
      ctx.devicehub.uploadCsv(await readUpload(args.File, ctx.csvMaxBytes)),
    CreateBrowseTask: (_r, args: { input: { DeviceID: string } }, ctx) =>
      ctx.browse.createTask(args.input.DeviceID),
    BrowseTask_CreateRegistersByFoldersSelection: (_r, args: { input: FoldersSelection }, ctx) =>
      ctx.browse.createRegisters(args.input),
    Cart_AddItemsByFoldersSelection: (_r, args: { input: FoldersSelection }, ctx) =>
      ctx.browse.addToCart(owner(ctx), args.input),
    Cart_CreateRegisters: (_r, _args, ctx) => ctx.browse.createFromCart(owner(ctx)),
    Cart_Clear: (_r, _args, ctx) => ctx.browse.clearCart(owner(ctx)),
    WriteTag: (_r, args: { input: WriteTagRequest }, ctx) => {
      if (!ctx.hub)
        throw badRequest('writing tags needs the DataHub, which this endpoint was mounted without');
      return writeTag(ctx.hub, ctx.devicehub, args.input);
    },
  },
  Subscription: {
    TagValues: {
      subscribe: (_r: unknown, args: { input: TagValuesRequest }, ctx: DevicehubContext) =>
        tagValuesFeed(ctx.devicehub, args.input),
    },
  },
};
