/**
 * Small ONNX models made by the tests themselves (no download): the ONNX schema's few messages
 * needed (field numbers of onnx/onnx.proto) encoded with protobufjs, and the same arithmetic in
 * JavaScript (float32) to check an inference against.
 */
import protobuf from 'protobufjs';

const ONNX_PROTO = `
syntax = "proto2";
package onnx;
message OperatorSetIdProto { optional string domain = 1; optional int64 version = 2; }
message TensorProto {
  repeated int64 dims = 1;
  optional int32 data_type = 2;
  repeated float float_data = 4 [packed = true];
  optional string name = 8;
}
message TensorShapeProto {
  message Dimension { optional int64 dim_value = 1; optional string dim_param = 2; }
  repeated Dimension dim = 1;
}
message TypeProto {
  message Tensor { optional int32 elem_type = 1; optional TensorShapeProto shape = 2; }
  optional Tensor tensor_type = 1;
}
message ValueInfoProto { optional string name = 1; optional TypeProto type = 2; }
message AttributeProto { optional string name = 1; optional float f = 2; optional int64 i = 3; optional int32 type = 20; }
message NodeProto {
  repeated string input = 1;
  repeated string output = 2;
  optional string name = 3;
  optional string op_type = 4;
  repeated AttributeProto attribute = 5;
}
message GraphProto {
  repeated NodeProto node = 1;
  optional string name = 2;
  repeated TensorProto initializer = 5;
  repeated ValueInfoProto input = 11;
  repeated ValueInfoProto output = 12;
}
message ModelProto {
  optional int64 ir_version = 1;
  optional string producer_name = 2;
  optional GraphProto graph = 7;
  repeated OperatorSetIdProto opset_import = 8;
}
`;

const FLOAT = 1;
const ModelProto = protobuf.parse(ONNX_PROTO).root.lookupType('onnx.ModelProto');

const valueInfo = (name: string, dims: number[]) => ({
  name,
  type: { tensorType: { elemType: FLOAT, shape: { dim: dims.map((d) => ({ dimValue: d })) } } },
});

/** A dense layer `y = x · W + b` (x: [1, n], W: [n, m], b: [m]) as ONNX (MatMul, Add). */
export interface DenseModel {
  n: number;
  m: number;
  w: number[];
  b: number[];
  bytes: Buffer;
  /** The same arithmetic in float32, as the runtime does it. */
  apply(x: ArrayLike<number>): number[];
}

export function denseModel(n: number, m: number, seed = 1): DenseModel {
  let s = seed;
  const rnd = () => ((s = (s * 16807) % 2147483647) / 2147483647) * 2 - 1;
  const w = Array.from({ length: n * m }, () => Math.fround(rnd()));
  const b = Array.from({ length: m }, () => Math.fround(rnd()));
  const model = {
    irVersion: 8,
    producerName: 'millwright-test',
    opsetImport: [{ domain: '', version: 13 }],
    graph: {
      name: 'dense',
      node: [
        { input: ['x', 'W'], output: ['xw'], name: 'matmul', opType: 'MatMul' },
        { input: ['xw', 'b'], output: ['y'], name: 'add', opType: 'Add' },
      ],
      initializer: [
        { name: 'W', dims: [n, m], dataType: FLOAT, floatData: w },
        { name: 'b', dims: [m], dataType: FLOAT, floatData: b },
      ],
      input: [valueInfo('x', [1, n])],
      output: [valueInfo('y', [1, m])],
    },
  };
  const err = ModelProto.verify(model);
  if (err) throw new Error(err);
  const bytes = Buffer.from(ModelProto.encode(ModelProto.fromObject(model)).finish());
  return {
    n,
    m,
    w,
    b,
    bytes,
    apply(x) {
      const y: number[] = [];
      for (let j = 0; j < m; j++) {
        let acc = 0;
        for (let i = 0; i < n; i++) acc += Math.fround(x[i]!) * w[i * m + j]!;
        y.push(Math.fround(acc + b[j]!));
      }
      return y;
    },
  };
}
