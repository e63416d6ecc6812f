//! The boundary's methods that cannot carry a state: every one is handed to the wrapped
//! handler unchanged.
//!
//! Why by hand: rmcp's Streamable HTTP transport takes a `ServerHandler` (not any `Service`), so
//! the boundary must be one, and rmcp exports no macro that delegates a `ServerHandler` to an
//! inner one. The list follows rmcp 3.11's `ServerHandler`; a method rmcp adds later falls back
//! to its default until it is added here, but it cannot leak a state: a handler reads states
//! only through what the boundary's `open` puts in the request. The deprecated methods
//! (logging, legacy subscriptions) are handed on too.

/// The forwarding methods, expanded inside `impl ServerHandler for Sealed<H>` (a trait's
/// methods must sit in one `impl` block; this keeps them out of the boundary's file).
macro_rules! forwarded_to_inner {
    () => {
        fn ping(
            &self,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
            self.inner.ping(context)
        }

        fn initialize(
            &self,
            request: InitializeRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<InitializeResult, ErrorData>> + MaybeSendFuture + '_ {
            self.inner.initialize(request, context)
        }

        fn negotiate_initialize(&self, request: &InitializeRequestParams) -> Result<InitializeResult, ErrorData> {
            self.inner.negotiate_initialize(request)
        }

        fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
            self.inner.supported_protocol_versions()
        }

        fn complete(
            &self,
            request: CompleteRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<CompleteResult, ErrorData>> + MaybeSendFuture + '_ {
            self.inner.complete(request, context)
        }

        fn set_level(
            &self,
            request: SetLevelRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
            self.inner.set_level(request, context)
        }

        fn list_prompts(
            &self,
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListPromptsResult, ErrorData>> + MaybeSendFuture + '_ {
            self.inner.list_prompts(request, context)
        }

        fn list_resources(
            &self,
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListResourcesResult, ErrorData>> + MaybeSendFuture + '_ {
            self.inner.list_resources(request, context)
        }

        fn list_resource_templates(
            &self,
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListResourceTemplatesResult, ErrorData>> + MaybeSendFuture + '_ {
            self.inner.list_resource_templates(request, context)
        }

        fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
            self.inner.accepted_subscription_filter(requested)
        }

        fn listen(
            &self,
            context: SubscriptionContext,
        ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
            self.inner.listen(context)
        }

        fn subscribe(
            &self,
            request: SubscribeRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
            self.inner.subscribe(request, context)
        }

        fn unsubscribe(
            &self,
            request: UnsubscribeRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
            self.inner.unsubscribe(request, context)
        }

        fn list_tools(
            &self,
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + MaybeSendFuture + '_ {
            self.inner.list_tools(request, context)
        }

        fn get_tool(&self, name: &str) -> Option<Tool> {
            self.inner.get_tool(name)
        }

        fn on_custom_request(
            &self,
            request: CustomRequest,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<CustomResult, ErrorData>> + MaybeSendFuture + '_ {
            self.inner.on_custom_request(request, context)
        }

        fn on_cancelled(
            &self,
            notification: CancelledNotificationParam,
            context: NotificationContext<RoleServer>,
        ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
            self.inner.on_cancelled(notification, context)
        }

        fn on_progress(
            &self,
            notification: ProgressNotificationParam,
            context: NotificationContext<RoleServer>,
        ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
            self.inner.on_progress(notification, context)
        }

        fn on_initialized(
            &self,
            context: NotificationContext<RoleServer>,
        ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
            self.inner.on_initialized(context)
        }

        fn on_roots_list_changed(
            &self,
            context: NotificationContext<RoleServer>,
        ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
            self.inner.on_roots_list_changed(context)
        }

        fn on_custom_notification(
            &self,
            notification: CustomNotification,
            context: NotificationContext<RoleServer>,
        ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
            self.inner.on_custom_notification(notification, context)
        }

        fn list_skills(
            &self,
            request: Option<PaginatedRequestParams>,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListSkillsResult, ErrorData>> + MaybeSendFuture + '_ {
            self.inner.list_skills(request, context)
        }

        fn get_skill(
            &self,
            request: GetSkillRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<GetSkillResult, ErrorData>> + MaybeSendFuture + '_ {
            self.inner.get_skill(request, context)
        }

        fn read_resource_directory(
            &self,
            request: ReadResourceDirectoryRequestParams,
            context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ReadResourceDirectoryResult, ErrorData>> + MaybeSendFuture + '_ {
            self.inner.read_resource_directory(request, context)
        }
    };
}

pub(super) use forwarded_to_inner;
