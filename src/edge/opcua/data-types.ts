/** DeviceHub value types as OPC UA built-in data types. */

/** DeviceHub value type → OPC UA built-in data type name. */
export function uaDataType(valueType: string | null): string {
  switch (valueType) {
    case 'float64':
      return 'Double';
    case 'float32':
      return 'Float';
    case 'int8':
    case 'sint':
      return 'SByte';
    case 'byte':
    case 'uint8':
      return 'Byte';
    case 'int16':
      return 'Int16';
    case 'uint16':
    case 'word':
      return 'UInt16';
    case 'int32':
      return 'Int32';
    case 'uint32':
    case 'dword':
      return 'UInt32';
    case 'int64':
      return 'Int64';
    case 'uint64':
      return 'UInt64';
    case 'bool':
    case 'bit':
    case 'boolean':
      return 'Boolean';
    default:
      return 'String';
  }
}
