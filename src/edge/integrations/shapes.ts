/** The integration service's views of instances, subscriptions, queues and status, and its requests. */
import type { InstanceState } from './state.js';
import type { InstanceConfig } from './validation.js';

export interface InstanceView {
  ID: string;
  InstanceID: string;
  Name: string;
  ProviderID: string;
  ProviderName: string;
  Config: InstanceConfig;
  Enabled: boolean;
  ExecCommandEnabled: boolean;
  Description: string;
  CreationTime: string;
  UpdateTime: string;
}

export interface SubscriptionView {
  TopicID: string;
  InstanceID: string;
  IsLocalToRemote: boolean;
  Enabled: boolean;
  LocalName: string;
  RemoteName: string;
  Config: Record<string, unknown>;
  Description: string;
}

export interface QueueView {
  InstanceID: string;
  Depth: number;
  Bytes: number;
  FileBytes: number;
  OldestMessageAgeMs: number | null;
  OldestMessageTime: string | null;
  MaxBytes: number;
  MaxMessages: number;
  FullPolicy: string;
  Dropped: number;
}

export interface StatusView {
  InstanceID: string;
  InstanceState: InstanceState;
  Reason: string;
  Since: string;
  LastError: string;
  LastErrorTime: string | null;
  ProviderName: string;
  ExecCommandEnabled: boolean;
  Counters: {
    Sent: number;
    Received: number;
    Queued: number;
    Enqueued: number;
    Dropped: number;
    Malformed: number;
  };
  Queue: QueueView;
}

export interface CreateInstanceRequest {
  Name: string;
  ProviderID: string;
  Config?: unknown;
  Enabled?: boolean | null;
  ExecCommandEnabled?: boolean | null;
  Description?: string | null;
}

export interface UpdateInstanceRequest {
  InstanceID: string;
  Name?: string | null;
  Config?: unknown;
  Enabled?: boolean | null;
  ExecCommandEnabled?: boolean | null;
  Description?: string | null;
}

export interface CreateSubscriptionRequest {
  InstanceID: string;
  IsLocalToRemote: boolean;
  LocalName: string;
  RemoteName: string;
  Enabled?: boolean | null;
  Config?: Record<string, unknown> | null;
  Description?: string | null;
}

export interface UpdateSubscriptionRequest {
  TopicID: string;
  IsLocalToRemote?: boolean | null;
  LocalName?: string | null;
  RemoteName?: string | null;
  Enabled?: boolean | null;
  Config?: Record<string, unknown> | null;
  Description?: string | null;
}
