/**
 * `/devicehub/v2` CSV upload (GraphQL multipart request) and export, and the browse tasks and
 * cart: good lines stored, bad lines reported one by one and never half-applied, the export
 * round-trips.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { FormData, request } from 'undici';
import {
  bootstrapAdmin,
  clientToken,
  graphql,
  insecureAgent,
  startTestEdge,
  type TestEdge,
} from '../helpers/edge.js';

const PATH = '/devicehub/v2';
let t: TestEdge;
let auth: string;
let adminBearer: string;

async function ok(query: string, variables?: Record<string, unknown>, authorization = auth): Promise<any> {
  const r = await graphql(t, PATH, authorization, query, variables);
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.errors, undefined, JSON.stringify(r.body.errors));
  return r.body.data;
}

const UPLOAD = `mutation($file: Upload!) { UploadCsv(File: $file) { Success Stats { Total Created Updated Failed } FailDetails { Line DeviceName TagName Reason } Warnings } }`;

/** A GraphQL multipart request (graphql-multipart-request-spec), as upload clients send it. */
async function upload(csv: string, authorization = auth): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('operations', JSON.stringify({ query: UPLOAD, variables: { file: null } }));
  form.append('map', JSON.stringify({ 0: ['variables.file'] }));
  form.append('0', new Blob([csv], { type: 'text/csv' }), 'tags.csv');
  const res = await request(`${t.url}${PATH}`, {
    method: 'POST',
    headers: { authorization },
    body: form,
    dispatcher: insecureAgent,
  });
  return { status: res.statusCode, body: await res.body.json() };
}

const EXPORT = `query($ids: [ID!]) { ExportCsv(DeviceIDs: $ids) }`;
const LIST = `query($in: ListRegistersRequest!) { ListRegisters(input: $in) { TotalCount Registers { TagName Name ValueType Description IntervalMs PublishCoV TagFormula MetaData Properties { Name Value } } } }`;

let gen: any;
let mb: any;
before(async () => {
  t = await startTestEdge();
  adminBearer = await bootstrapAdmin(t);
  auth = `Bearer ${(await clientToken(t, adminBearer)).token}`;
  const mk = `mutation($in: CreateDeviceRequest!) { CreateDevice(input: $in) { ID Name } }`;
  gen = (await ok(mk, { in: { Name: 'csv-gen', DriverID: 'Generator' } })).CreateDevice;
  mb = (
    await ok(mk, {
      in: { Name: 'csv-mb', DriverID: 'Modbus TCP', Properties: [{ Key: 'host', Value: '127.0.0.1' }] },
    })
  ).CreateDevice;
});
after(() => t.stop());

describe('UploadCsv and ExportCsv', () => {
  test('good lines are stored, bad lines reported per line and not applied at all', async () => {
    const csv = [
      'DeviceName,TagName,Name,ValueType,Description,IntervalMs,PublishCoV,TagFormula,MetaData,Property.address,Property.amplitude,Property.byteOrder',
      'csv-gen,sine_1,S,float64,"a sine, with a comma",500,true,,"{""unit"":""bar""}",1,2.5,',
      'csv-gen,sine_2,S,float64,,,false,x*2,,2,,',
      'csv-gen,bad_addr,S,float64,,,,,,70000,,', // 4: address out of range
      'csv-mb,hr_1,HR,int16,"two\nlines",,,,,100,,CDAB',
      'csv-mb,hr_bad,HR,int16,,,,,,101,,WXYZ', // 6: bad byteOrder (after a two-line record)
      'nowhere,t1,S,float64,,,,,,1,,', // 7: unknown device
      'csv-gen,sine_1,S,float64,,,,,,3,,', // 8: duplicate of line 2
      'csv-gen,bad_vt,S,bit,,,,,,4,,', // 9: value type
      'csv-gen,short,S', // 10: too few fields
      'csv-gen,bad_cov,S,float64,,,maybe,,,5,,', // 11
      'csv-gen,bad_meta,S,float64,,,,,[1],6,,', // 12
      '',
    ].join('\n');
    const res = await upload(csv);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const status = res.body.data.UploadCsv;
    assert.deepEqual(status.Stats, { Total: 11, Created: 3, Updated: 0, Failed: 8 });
    assert.equal(status.Success, false);
    const byLine = Object.fromEntries(status.FailDetails.map((f: any) => [f.Line, f]));
    // Line numbers are physical lines: the record of hr_1 spans lines 5 and 6.
    assert.deepEqual(
      status.FailDetails.map((f: any) => f.Line),
      [4, 7, 8, 9, 10, 11, 12, 13],
    );
    assert.match(
      byLine[4].Reason,
      /tag "bad_addr" of device "csv-gen": property "address" does not allow "70000"; allowed values: integers from 0 to 65535/,
    );
    assert.equal(byLine[4].TagName, 'bad_addr');
    assert.equal(byLine[4].DeviceName, 'csv-gen');
    assert.match(byLine[7].Reason, /property "byteOrder" does not allow "WXYZ"; allowed values: ABCD/);
    assert.match(byLine[8].Reason, /device "nowhere" does not exist/);
    assert.match(byLine[9].Reason, /tag "sine_1" of device "csv-gen" is already on line 2/);
    assert.match(byLine[10].Reason, /value type "bit" is not allowed on register "S"; allowed values: int16/);
    assert.match(byLine[11].Reason, /the line has 3 fields; the header has 12/);
    assert.match(byLine[12].Reason, /PublishCoV "maybe" is not allowed; allowed values: true, false/);
    assert.match(byLine[13].Reason, /MetaData "\[1\]" is not allowed; allowed values: a JSON object/);
    assert.deepEqual(
      status.Warnings,
      status.FailDetails.map((f: any) => `line ${f.Line}: ${f.Reason}`),
    );

    const genTags = (await ok(LIST, { in: { DeviceID: gen.ID, Limit: 100 } })).ListRegisters;
    assert.deepEqual(
      genTags.Registers.map((r: any) => r.TagName),
      ['sine_1', 'sine_2'],
      'no trace of the bad lines',
    );
    const s1 = genTags.Registers[0];
    assert.equal(s1.Description, 'a sine, with a comma');
    assert.equal(s1.IntervalMs, 500);
    assert.equal(s1.PublishCoV, true);
    assert.deepEqual(s1.MetaData, { unit: 'bar' });
    assert.equal(s1.Properties.find((p: any) => p.Name === 'amplitude').Value, '2.5');
    assert.equal(genTags.Registers[1].TagFormula, 'x*2');
    const mbTags = (await ok(LIST, { in: { DeviceID: mb.ID } })).ListRegisters;
    assert.deepEqual(
      mbTags.Registers.map((r: any) => [r.TagName, r.Description]),
      [['hr_1', 'two\nlines']],
    );

    // The same file again: the good lines update, nothing is duplicated.
    const again = (await upload(csv)).body.data.UploadCsv;
    assert.deepEqual(again.Stats, { Total: 11, Created: 0, Updated: 3, Failed: 8 });

    // A bad line for an existing tag leaves that tag exactly as it was.
    const beforeBad = (await ok(LIST, { in: { DeviceID: gen.ID, Limit: 100 } })).ListRegisters.Registers[0];
    const bad = (
      await upload(
        'DeviceName,TagName,Name,ValueType,Description,Property.address\n' +
          'csv-gen,sine_1,S,float64,changed description,70000\n' +
          'csv-gen,sine_2,S,float64,changed too,9\n',
      )
    ).body.data.UploadCsv;
    assert.deepEqual(bad.Stats, { Total: 2, Created: 0, Updated: 1, Failed: 1 });
    assert.equal(bad.FailDetails[0].Line, 2);
    const afterBad = (await ok(LIST, { in: { DeviceID: gen.ID, Limit: 100 } })).ListRegisters.Registers;
    assert.deepEqual(afterBad[0], beforeBad);
    assert.equal(afterBad[1].Description, 'changed too');
  });

  test('the export round-trips: export, delete, upload, export gives the same file', async () => {
    const first = (await ok(EXPORT)).ExportCsv as string;
    const lines = first.trim().split('\r\n');
    assert.match(
      lines[0]!,
      /^DeviceName,TagName,Name,ValueType,Description,IntervalMs,PublishCoV,TagFormula,MetaData,Property\.address/,
    );
    const all = `{ ListRegistersFromAllDevices(input: { Limit: 1000 }) { TotalCount Registers { ID } } }`;
    const before = (await ok(all)).ListRegistersFromAllDevices;
    assert.ok(before.TotalCount >= 3);
    await ok(`mutation($ids: [ID!]!) { DeleteRegisters(IDs: $ids) }`, {
      ids: before.Registers.map((r: any) => r.ID),
    });
    assert.equal((await ok(all)).ListRegistersFromAllDevices.TotalCount, 0);
    const res = (await upload(first)).body.data.UploadCsv;
    assert.deepEqual(res.Stats, {
      Total: before.TotalCount,
      Created: before.TotalCount,
      Updated: 0,
      Failed: 0,
    });
    assert.equal(res.Success, true);
    assert.equal((await ok(EXPORT)).ExportCsv, first);
    const onlyMb = (await ok(EXPORT, { ids: [mb.ID] })).ExportCsv as string;
    assert.equal(onlyMb.trim().split('\r\n').length, 2);
  });

  test('header problems refuse the whole file; a viewer cannot upload', async () => {
    const res = await upload('DeviceName,TagName,Name\ncsv-gen,x,S\n');
    assert.equal(res.body.data, null);
    assert.match(res.body.errors[0].message, /the CSV header lacks column "ValueType"/);
    const unknown = await upload('DeviceName,TagName,Name,ValueType,Colour\n');
    assert.match(unknown.body.errors[0].message, /unknown column "Colour"/);
    const viewer = `Bearer ${(await clientToken(t, adminBearer, 'viewer')).token}`;
    const denied = await upload('DeviceName,TagName,Name,ValueType\n', viewer);
    assert.equal(denied.status, 403);
  });
});

describe('browse tasks and the cart', () => {
  test('BrowseTask_CreateRegistersByFoldersSelection and Cart_AddItemsByFoldersSelection', async () => {
    const dev = (
      await ok(`mutation { CreateDevice(input: { Name: "browse-gen", DriverID: "Generator" }) { ID } }`)
    ).CreateDevice;
    const task = (
      await ok(
        `mutation($d: ID!) { CreateBrowseTask(input: { DeviceID: $d }) { ID DeviceID State ItemCount } }`,
        { d: dev.ID },
      )
    ).CreateBrowseTask;
    assert.equal(task.State, 'Done');
    assert.equal(task.DeviceID, dev.ID);
    const got = (
      await ok(`query($id: ID!) { GetBrowseTask(ID: $id) { ID State ItemCount Error CreationTime } }`, {
        id: task.ID,
      })
    ).GetBrowseTask;
    assert.deepEqual([got.ID, got.State, got.Error], [task.ID, 'Done', null]);
    assert.equal(got.ItemCount, task.ItemCount);
    assert.ok(task.ItemCount > 10);
    const roots = (
      await ok(
        `query($id: ID!) { ListBrowseTaskItems(input: { TaskID: $id }) { Total Items { Path IsFolder DeviceID } } }`,
        { id: task.ID },
      )
    ).ListBrowseTaskItems;
    assert.ok(roots.Items.some((i: any) => i.Path === 'S' && i.IsFolder && i.DeviceID === dev.ID));
    const leaves = (
      await ok(
        `query($id: ID!) { ListBrowseTaskItems(input: { TaskID: $id, Path: "S" }) { Total Items { Path Name IsFolder RegisterName ValueType DeviceID Properties { Name Value } } } }`,
        { id: task.ID },
      )
    ).ListBrowseTaskItems;
    assert.equal(leaves.Total, 10);
    assert.deepEqual(leaves.Items[3], {
      Path: 'S/S_3',
      Name: 'S_3',
      IsFolder: false,
      RegisterName: 'S',
      ValueType: 'float64',
      DeviceID: dev.ID,
      Properties: [{ Name: 'address', Value: '3' }],
    });

    const sel = `mutation($in: CreateRegistersByFoldersSelectionRequest!) { BrowseTask_CreateRegistersByFoldersSelection(input: $in) { Created Skipped Registers { TagName Name IntervalMs DeviceID } } }`;
    const made = (await ok(sel, { in: { TaskID: task.ID, Folders: ['S'], IntervalMs: 250 } }))
      .BrowseTask_CreateRegistersByFoldersSelection;
    assert.equal(made.Created, 10);
    assert.ok(
      made.Registers.every((r: any) => r.Name === 'S' && r.IntervalMs === 250 && r.DeviceID === dev.ID),
    );
    const again = (await ok(sel, { in: { TaskID: task.ID, Folders: ['S', 'M'] } }))
      .BrowseTask_CreateRegistersByFoldersSelection;
    assert.deepEqual([again.Created, again.Skipped], [10, 10]);

    const cartAdd = `mutation($in: CreateRegistersByFoldersSelectionRequest!) { Cart_AddItemsByFoldersSelection(input: $in) { Total Items { Path DeviceID } } }`;
    let cart = (await ok(cartAdd, { in: { TaskID: task.ID, Folders: ['R'] } }))
      .Cart_AddItemsByFoldersSelection;
    assert.equal(cart.Total, 10);
    cart = (await ok(cartAdd, { in: { TaskID: task.ID, Folders: ['R', 'Q'] } }))
      .Cart_AddItemsByFoldersSelection;
    assert.equal(cart.Total, 20, 'no item twice');
    assert.equal((await ok(`{ GetCart { Total } }`)).GetCart.Total, 20);
    const fromCart = (await ok(`mutation { Cart_CreateRegisters { Created Skipped } }`)).Cart_CreateRegisters;
    assert.deepEqual([fromCart.Created, fromCart.Skipped], [20, 0]);
    assert.equal((await ok(`{ GetCart { Total } }`)).GetCart.Total, 0);
    await ok(cartAdd, { in: { TaskID: task.ID, Folders: ['N'] } });
    assert.equal((await ok(`mutation { Cart_Clear { Total } }`)).Cart_Clear.Total, 0);

    const badFolder = await graphql(t, PATH, auth, sel, { in: { TaskID: task.ID, Folders: ['Nope'] } });
    assert.match(badFolder.body.errors[0].message, /folder "Nope" does not exist; top folders: S, Ssub, M/);
    const mbTask = await graphql(
      t,
      PATH,
      auth,
      `
        mutation ($d: ID!) {
          CreateBrowseTask(input: { DeviceID: $d }) {
            ID
          }
        }
      `,
      { d: mb.ID },
    );
    assert.match(
      mbTask.body.errors[0].message,
      /device "csv-mb": driver "Modbus TCP" cannot browse in this build/,
    );
  });
});
